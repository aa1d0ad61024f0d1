package anthropicmodel

import (
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/pricing"
	"github.com/polyloop/polyloop/internal/provider"
)

// config is what Describe puts in the snapshot: everything about the client
// that changes what the model sees or how calls are made. Never the key.
type config struct {
	Provider             string `json:"provider"`
	BaseURL              string `json:"base_url"`
	DefaultModel         string `json:"default_model,omitempty"`
	DefaultMaxTokens     int    `json:"default_max_tokens"`
	UnansweredToolResult string `json:"unanswered_tool_result"`
	EmptyObservation     string `json:"empty_observation"`
	UnsupportedParams    string `json:"unsupported_params"`
	PriceTable           string `json:"price_table"`
	// Prices are the prices of a table of the caller's own (see
	// provider.Settings.DescribedPrices).
	Prices           map[string]pricing.Price `json:"prices,omitempty"`
	AttemptTimeoutMS int64                    `json:"attempt_timeout_ms,omitempty"`
	Retry            provider.RetryConfig     `json:"retry"`
}

// Describe identifies the client in the run's snapshot: provider, base URL,
// price table version (a table of the caller's own: its prices), request
// shaping (including the parameters the API has no field for, which are not
// sent) and retry policy. It never includes the API key.
func (c *Client) Describe() polyloop.Component {
	return provider.Component("anthropicmodel", config{
		Provider:             "anthropic",
		BaseURL:              c.p.SafeBaseURL(),
		DefaultModel:         c.p.Model,
		DefaultMaxTokens:     c.maxTokens,
		UnansweredToolResult: c.p.UnansweredToolResult,
		EmptyObservation:     c.emptyObservation,
		UnsupportedParams:    c.unsupportedPolicy(),
		PriceTable:           c.p.PriceTable(),
		Prices:               c.p.DescribedPrices(),
		AttemptTimeoutMS:     c.p.AttemptTimeoutMS(),
		Retry:                c.p.RetryConfig(),
	})
}

// unsupportedPolicy says what happens to temperature, top_p and seed.
func (c *Client) unsupportedPolicy() string {
	if c.dropUnsupported {
		return "temperature, top_p and seed are not sent"
	}
	return "temperature, top_p and seed fail the call"
}

// KnowsCost implements polyloop.CostReporter: the client knows the cost of
// its calls to a model its price table prices (params.Model, else
// Options.Model). The shipped table prices the provider's own API only;
// elsewhere Options.Prices must.
func (c *Client) KnowsCost(params polyloop.ModelParams) bool { return c.p.KnowsCost(params.Model) }
