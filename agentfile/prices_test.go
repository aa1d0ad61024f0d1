package agentfile

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
)

// chatServer is an OpenAI-compatible server whose every reply is a tool
// call of bash using 10 input and 5 output tokens, by model "local".
func chatServer(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		msg := map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": "call_1", "type": "function", "function": map[string]any{"name": "bash", "arguments": `{"command":"true"}`}}}}
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "c", "object": "chat.completion", "created": 1, "model": "local",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "tool_calls"}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1/"
}

// TestPricesMakeABudgetWork: with model.prices, a cost budget on a server
// the client has no shipped prices for is checked and stops the run; the
// prices are in the snapshot (the client's description).
func TestPricesMakeABudgetWork(t *testing.T) {
	t.Parallel()
	src := "name: a\nmodel:\n  provider: openai\n  model: local\n  base_url: '" + chatServer(t) + "'\n" +
		"  prices:\n    local: {input: 1000, output: 2000, cached_input: 100}\n" +
		"tools:\n  shell: {dir: work, replay: replay_safe}\nlimits: {max_steps: 6, max_cost_usd: 0.02}\n"
	cfg, err := Load(context.Background(), writeFile(t, "agent.yaml", src), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	var desc struct {
		PriceTable string `json:"price_table"`
		Prices     map[string]struct {
			Input, Output float64
			CachedInput   *float64 `json:"cached_input"`
		} `json:"prices"`
	}
	if err := json.Unmarshal(polyloop.Describe(cfg.Model).Config, &desc); err != nil {
		t.Fatal(err)
	}
	if p := desc.Prices["local"]; desc.PriceTable != PriceTableVersion || p.Input != 1000 || p.Output != 2000 || p.CachedInput == nil || *p.CachedInput != 100 {
		t.Errorf("the client's description %+v does not hold the file's prices", desc)
	}
	res, err := cfg.Runner(memstore.New()).Run(context.Background(), "r", cfg.Agent, polyloop.Task{Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	// Each call costs 10*1000/1e6 + 5*2000/1e6 = 0.02 USD: the budget is
	// reached after the first.
	if res.StopReason != polyloop.StopCostBudget || res.Totals.ModelCalls != 1 || res.Totals.CostUnknown || res.Totals.CostUSD != 0.02 {
		t.Errorf("result %+v; want cost_budget after one call of 0.02 USD", res)
	}
}

// TestUncheckableBudgetRefusedAtLoad: a cost budget on a model whose cost
// cannot be known is refused when the file is loaded, at max_cost_usd,
// saying what to add.
func TestUncheckableBudgetRefusedAtLoad(t *testing.T) {
	t.Parallel()
	url := chatServer(t)
	getenv := func(k string) string {
		if k == "OPENAI_API_KEY" {
			return "test-key-not-real"
		}
		return ""
	}
	for _, tt := range []struct {
		name, src string
		line, col int
		want      string
	}{
		{"another server", "name: a\nmodel: {provider: openai, model: local, base_url: '" + url + "'}\nlimits:\n  max_cost_usd: 0.5\n", 4, 17,
			`limits.max_cost_usd: a cost budget needs the price of model "local", which the openai client does not know: its shipped prices are OpenAI's, for OpenAI's own API, and base_url is another server; add it to model.prices (USD per million tokens): prices: {local: {input: ..., output: ...}}, or drop max_cost_usd`},
		{"a model the table lacks", "name: a\nmodel: {provider: openai, model: my-finetune}\nlimits: {max_cost_usd: 0.5}\n", 3, 24,
			`the price of model "my-finetune", which the openai client does not know: its shipped price table has no price for it; add it to model.prices`},
		{"prices for another model", "name: a\nmodel:\n  provider: openai\n  model: local\n  base_url: '" + url + "'\n  prices: {other: {input: 1, output: 1}}\nlimits: {max_cost_usd: 0.5}\n", 7, 24,
			`the price of model "local", which the openai client does not know: model.prices has none for it`},
		{"scripted, no price", scriptHead + "limits: {max_cost_usd: 0.5}\n", 6, 24,
			"a cost budget needs the price of the scripted model's tokens: set model.cost_per_token, or drop max_cost_usd"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Load(context.Background(), writeFile(t, "agent.yaml", tt.src), &Options{Getenv: getenv})
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, polyloop.ErrUncheckableBudget) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Load: %v; want an *Error matching ErrUncheckableBudget and ErrInvalid", err)
			}
			if e.Line != tt.line || e.Column != tt.col || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%v\nwant at %d:%d: %s", err, tt.line, tt.col, tt.want)
			}
		})
	}
	// The shipped prices of the provider's own API check a budget.
	cfg, err := Load(context.Background(), writeFile(t, "agent.yaml", "name: a\nmodel: {provider: openai, model: gpt-4o-mini}\nlimits: {max_cost_usd: 0.5}\n"),
		&Options{Getenv: getenv})
	if err != nil {
		t.Fatalf("gpt-4o-mini on OpenAI's API with a budget: %v", err)
	}
	cfg.Close()
}

func TestCheckRefusesBadPrices(t *testing.T) {
	t.Parallel()
	head := "name: a\nmodel:\n  provider: openai\n  model: m\n  base_url: 'http://localhost:1/v1/'\n  prices:\n"
	for _, tt := range []struct {
		name, src string
		line, col int
		want      string
	}{
		{"no output", head + "    m: {input: 1}\n", 7, 9, "model.prices.m: required: output, the price of output tokens in USD per million"},
		{"negative", head + "    m: {input: -1, output: 1}\n", 7, 16, "expected zero or a positive number, found -1"},
		{"unknown key", head + "    m: {input: 1, output: 1, cache_read: 1}\n", 7, 30, `unknown field "cache_read"`},
		{"script", scriptHead + "  prices: {m: {input: 1, output: 1}}\n", 6, 12, "prices apply to openai and anthropic; the scripted model is priced by cost_per_token"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkRefused(t, tt.src, tt.line, tt.col, tt.want)
		})
	}
}
