package agentfile

import (
	"fmt"
	"maps"
	"slices"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/anthropicmodel"
	"github.com/polyloop/polyloop/internal/provider"
	"github.com/polyloop/polyloop/openaimodel"
)

// PriceTableVersion is the version of the price table built from
// model.prices, as the client's description names it.
const PriceTableVersion = "agent-file"

// prices checks model.prices.
func (v *validator) prices(m ModelSpec) {
	p := path{"model", "prices"}
	if m.Prices == nil {
		return
	}
	if m.Provider == "script" {
		v.fail(p, "prices apply to openai and anthropic; the scripted model is priced by cost_per_token")
		return
	}
	for _, model := range slices.Sorted(maps.Keys(m.Prices)) {
		ps, q := m.Prices[model], p.at(model)
		for _, f := range []struct {
			key      string
			v        *float64
			required string
		}{
			{"input", ps.Input, "the price of input tokens"},
			{"output", ps.Output, "the price of output tokens"},
			{"cached_input", ps.CachedInput, ""},
			{"cache_write", ps.CacheWrite, ""},
		} {
			switch {
			case f.v == nil && f.required != "":
				v.fail(q, "required: %s, %s in USD per million", f.key, f.required)
			case f.v != nil && *f.v < 0:
				v.fail(q.at(f.key), "expected zero or a positive number, found %v", *f.v)
			}
		}
	}
}

// priceTable is the table model.prices make, nil without them (the client
// then uses its shipped table, on the provider's own API).
func (b *builder) priceTable() *openaimodel.PriceTable {
	ps := b.f.Model.Prices
	if ps == nil {
		return nil
	}
	t := &openaimodel.PriceTable{Version: PriceTableVersion, Source: "the agent file's model.prices", Models: map[string]openaimodel.Price{}}
	for model, p := range ps {
		t.Models[model] = openaimodel.Price{Input: *p.Input, Output: *p.Output, CachedInput: p.CachedInput, CacheWrite: p.CacheWrite}
	}
	return t
}

// checkBudget refuses a cost budget on a model whose cost the client
// cannot know (polyloop.ErrUncheckableBudget, which Runner.Run would give):
// in the file's words, at limits.max_cost_usd, with what to add.
func (b *builder) checkBudget(client polyloop.ModelClient) error {
	m := b.f.Model
	if b.f.Limits.MaxCostUSD <= 0 {
		return nil
	}
	if cr, ok := client.(polyloop.CostReporter); ok && cr.KnowsCost(b.modelParams()) {
		return nil
	}
	var msg string
	switch {
	case m.Provider == "script":
		msg = "a cost budget needs the price of the scripted model's tokens: set model.cost_per_token, or drop max_cost_usd"
	default:
		why := "its shipped price table has no price for it"
		switch {
		case m.Prices != nil:
			why = "model.prices has none for it"
		case !b.providerAPI():
			why = fmt.Sprintf("its shipped prices are %s, for %s own API, and base_url is another server", b.vendor(), b.vendor())
		}
		msg = fmt.Sprintf("a cost budget needs the price of model %q, which the %s client does not know: %s; "+
			"add it to model.prices (USD per million tokens): prices: {%s: {input: ..., output: ...}}, or drop max_cost_usd",
			m.Model, m.Provider, why, m.Model)
	}
	e := b.loc.errorAt(path{"limits", "max_cost_usd"}, msg)
	e.Err = polyloop.ErrUncheckableBudget
	return e
}

// vendor names the provider whose API the client ships prices for.
func (b *builder) vendor() string {
	if b.f.Model.Provider == "anthropic" {
		return "Anthropic's"
	}
	return "OpenAI's"
}

// providerAPI reports whether the client calls its provider's own API.
func (b *builder) providerAPI() bool {
	def := openaimodel.DefaultBaseURL
	if b.f.Model.Provider == "anthropic" {
		def = anthropicmodel.DefaultBaseURL
	}
	return b.f.Model.BaseURL == "" || provider.SameHost(b.f.Model.BaseURL, def)
}
