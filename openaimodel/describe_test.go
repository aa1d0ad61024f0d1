package openaimodel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/provider"
	"github.com/polyloop/polyloop/internal/providertest"
)

func TestDescribe(t *testing.T) {
	t.Parallel()
	c, err := New(Options{BaseURL: "http://localhost:11434/v1/", Model: "llama3.1:8b", APIKey: "k",
		MaxBackoff: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	a, b := c.Describe(), c.Describe()
	if a.Name != "openaimodel" || !bytes.Equal(a.Config, b.Config) {
		t.Fatalf("Describe is not stable: %s vs %s", a.Config, b.Config)
	}
	var cfg config
	if err := json.Unmarshal(a.Config, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.BaseURL != "http://localhost:11434/v1/" || cfg.DefaultModel != "llama3.1:8b" ||
		cfg.PriceTable != provider.NoPriceTable || cfg.MaxTokensField != MaxCompletionTokens ||
		cfg.UnansweredToolResult != DefaultUnansweredToolResult || cfg.Retry.MaxBackoffMS != 5000 ||
		cfg.Retry.MaxRetryAfterMS != DefaultMaxRetryAfter.Milliseconds() ||
		cfg.AttemptTimeoutMS != DefaultTimeout.Milliseconds() {
		t.Errorf("Describe config = %s", a.Config)
	}
}

func TestShippedPriceTableVersion(t *testing.T) {
	t.Parallel()
	providertest.CheckShippedPrices(t, DefaultPrices, PriceTableVersion)
}

func TestCustomPriceTable(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, response{Status: 200, Fixture: "local_server.json"})
	zero := 0.0
	prices := &PriceTable{Version: "lab-2026-12", Models: map[string]Price{"llama3.1:8b": {Input: 0, Output: 0, CachedInput: &zero}}}
	c, err := New(Options{BaseURL: srv.URL(), Prices: prices})
	if err != nil {
		t.Fatal(err)
	}
	var cfg config
	_ = json.Unmarshal(c.Describe().Config, &cfg)
	if cfg.PriceTable != "lab-2026-12" {
		t.Errorf("Describe names price table %q, want lab-2026-12", cfg.PriceTable)
	}
	// The fixture has no usage, so even a known model's cost is unknown.
	reply, err := c.Complete(context.Background(), polyloop.ModelRequest{Messages: userOnly, Params: polyloop.ModelParams{Model: "x"}})
	if err != nil || reply.Usage.CostUSD != nil {
		t.Errorf("reply %+v, err %v: a reply without usage must have an unknown cost", reply, err)
	}
}

func TestNewRejects(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string]Options{
		"max tokens field":            {MaxTokensField: "max_output_tokens"},
		"price table without version": {Prices: &PriceTable{Models: map[string]Price{}}},
		"negative price":              {Prices: &PriceTable{Version: "v", Models: map[string]Price{"m": {Input: -1}}}},
	} {
		if _, err := New(opts); err == nil {
			t.Errorf("%s: New accepted %+v", name, opts)
		}
	}
}

func TestRequestErrorsAreNotSent(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, response{Status: 200, Fixture: "text.json"})
	c := newTestClient(t, srv.URL())
	for name, tc := range map[string]struct {
		req  polyloop.ModelRequest
		want error
	}{
		"no model":       {polyloop.ModelRequest{Messages: userOnly}, ErrNoModel},
		"unknown role":   {polyloop.ModelRequest{Messages: []polyloop.Message{{Role: "narrator"}}, Params: polyloop.ModelParams{Model: "m"}}, ErrBadRequest},
		"schema not obj": {polyloop.ModelRequest{Messages: userOnly, Tools: []polyloop.ToolSpec{{Name: "t", Parameters: json.RawMessage(`[1]`)}}, Params: polyloop.ModelParams{Model: "m"}}, ErrBadRequest},
	} {
		if _, err := c.Complete(context.Background(), tc.req); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", name, err, tc.want)
		}
	}
	if srv.Count() != 0 {
		t.Errorf("%d requests were sent for requests that cannot be built", srv.Count())
	}
}
