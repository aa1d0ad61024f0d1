package providertest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/pricing"
	"github.com/polyloop/polyloop/internal/provider"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/toolcallparser"
)

// labPrices is a price table of the caller's own, for a model no shipped
// table knows.
func labPrices() *pricing.Table {
	cached := 0.05
	return &pricing.Table{Version: "lab-1", Models: map[string]pricing.Price{"lab-model": {Input: 0.5, Output: 1.5, CachedInput: &cached}}}
}

// CheckCostKnown checks the client's polyloop.CostReporter and how
// Describe records its prices (issue 14, rule 4): the client knows the cost
// of a model exactly when its price table prices it — the shipped table on
// the provider's own API, the caller's table anywhere — and the Runner
// refuses a cost budget on a model whose cost it cannot know
// (ErrUncheckableBudget). Describe names the shipped table by its version;
// a table of the caller's own is described in full, so that the snapshot
// holds the prices the run's costs and budget are computed with.
func CheckCostKnown[P provider.Package](t *testing.T, h Harness[P]) {
	srv := h.Serve(t, h.OK)
	providerAPI := func(o Options) Options { o.HTTPClient = srv.Client(); return o }
	elsewhere := func(o Options) Options { o.BaseURL = srv.URL(); return o }
	for _, tc := range []struct {
		name   string
		opts   Options
		model  string
		knows  bool
		prices bool // Describe holds the prices
	}{
		{"shipped table, provider's API", providerAPI(Options{}), h.Model, true, false},
		{"shipped table, a model it lacks", providerAPI(Options{}), "no-such-model", false, false},
		{"shipped table, no model named", providerAPI(Options{}), "", false, false},
		{"another server, no table", elsewhere(Options{}), h.Model, false, false},
		{"another server, the caller's table", elsewhere(Options{Prices: labPrices()}), "lab-model", true, true},
		{"the caller's table, a model it lacks", elsewhere(Options{Prices: labPrices()}), h.Model, false, true},
		{"the client's default model", elsewhere(Options{Prices: labPrices(), Model: "lab-model"}), "", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.APIKey = "test-key"
			c, err := h.NewDefault(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			cr, ok := c.(polyloop.CostReporter)
			if !ok {
				t.Fatalf("%T is not a polyloop.CostReporter", c)
			}
			mp := polyloop.ModelParams{Model: tc.model}
			if got := cr.KnowsCost(mp); got != tc.knows {
				t.Errorf("KnowsCost(%q) = %v, want %v", tc.model, got, tc.knows)
			}
			var cfg struct {
				Prices map[string]pricing.Price `json:"prices"`
			}
			if err := json.Unmarshal(c.Describe().Config, &cfg); err != nil {
				t.Fatal(err)
			}
			if (cfg.Prices != nil) != tc.prices || (tc.prices && cfg.Prices["lab-model"].Output != 1.5) {
				t.Errorf("Describe's prices %v; want them described: %v", cfg.Prices, tc.prices)
			}
			err = runWithBudget(c, mp)
			if tc.knows && err != nil {
				t.Errorf("a cost budget on a priced model: %v", err)
			}
			if !tc.knows && (!errors.Is(err, polyloop.ErrUncheckableBudget) || !errors.Is(err, polyloop.ErrInvalidConfig)) {
				t.Errorf("a cost budget on a model without a price: %v; want ErrUncheckableBudget", err)
			}
		})
	}
	t.Run("a copy of the shipped table", func(t *testing.T) {
		c, err := h.New(elsewhere(Options{APIKey: "test-key"}))
		if err != nil {
			t.Fatal(err)
		}
		var cfg map[string]any
		if err := json.Unmarshal(c.Describe().Config, &cfg); err != nil {
			t.Fatal(err)
		}
		if _, ok := cfg["prices"]; ok || cfg["price_table"] != h.PriceTable {
			t.Errorf("Describe %v: the shipped table, copied, is named by its version only", cfg)
		}
	})
}

// runWithBudget runs a one-step agent with a cost budget on c: the error
// Run returns (nil once the run finished).
func runWithBudget(c polyloop.ModelClient, mp polyloop.ModelParams) error {
	r := &polyloop.Runner{Model: c, Parser: toolcallparser.New(toolcallparser.Options{}), Executor: WeatherExec{Tool: "f"}, Store: memstore.New()}
	agent := polyloop.Agent{Name: "budget", Model: mp, Limits: polyloop.Limits{MaxSteps: 1, MaxCostUSD: 1}}
	_, err := r.Run(context.Background(), "budget", agent, polyloop.Task{Input: "hi"})
	return err
}
