package pricing

import (
	"math"
	"testing"
)

const sample = `{
  "version": "test-1",
  "models": {
    "gpt-4o": {"input": 2.5, "cached_input": 1.25, "output": 10},
    "gpt-4o-mini": {"input": 0.15, "output": 0.6},
    "claude-x": {"input": 3, "cached_input": 0.3, "cache_write": 3.75, "output": 15},
    "tiered": {"input": 1, "output": 2, "long_prompt": {"threshold_tokens": 100, "price": {"input": 10, "cached_input": 5, "output": 20}}},
    "untiered-long": {"input": 1, "output": 2, "long_prompt": {"threshold_tokens": 100}}
  }
}`

func sampleTable(t *testing.T) *Table {
	t.Helper()
	tab, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func TestLookup(t *testing.T) {
	t.Parallel()
	tab := sampleTable(t)
	for _, tc := range []struct {
		model string
		input float64
		ok    bool
	}{
		{"gpt-4o", 2.5, true},
		{"gpt-4o-2024-08-06", 2.5, true},
		{"gpt-4o-mini", 0.15, true},
		{"gpt-4o-mini-2024-07-18", 0.15, true},
		{"claude-x-20250929", 3, true},
		{"claude-x-latest", 3, true},
		{"gpt-4o-turbo", 0, false},
		{"gpt-4", 0, false},
		{"", 0, false},
		{"llama3.1:8b", 0, false},
	} {
		p, ok := tab.Lookup(tc.model)
		if ok != tc.ok || p.Input != tc.input {
			t.Errorf("Lookup(%q) = %v, %v; want input %v, %v", tc.model, p, ok, tc.input, tc.ok)
		}
	}
}

func TestCost(t *testing.T) {
	t.Parallel()
	tab := sampleTable(t)
	for _, tc := range []struct {
		model string
		n     Tokens
		want  float64
		ok    bool
	}{
		// 1M uncached input at 2.5 + 1M cached at 1.25 + 1M output at 10.
		{"gpt-4o", Tokens{Input: 1e6, CachedInput: 1e6, Output: 1e6}, 13.75, true},
		// Without a cached price, cached input costs the input price.
		{"gpt-4o-mini", Tokens{Input: 1000, CachedInput: 1000, Output: 500}, (2000*0.15 + 500*0.6) / 1e6, true},
		{"claude-x", Tokens{Input: 100, CachedInput: 1000, CacheWrite: 200, Output: 50}, (100*3 + 1000*0.3 + 200*3.75 + 50*15) / 1e6, true},
		{"gpt-4o", Tokens{}, 0, true},
		// At the threshold the base price applies; above it, the long-prompt
		// price, for every token of the call.
		{"tiered", Tokens{Input: 60, CachedInput: 40, Output: 10}, (100*1 + 10*2) / 1e6, true},
		{"tiered", Tokens{Input: 60, CachedInput: 30, CacheWrite: 11, Output: 10}, (60*10 + 30*5 + 11*10 + 10*20) / 1e6, true},
		{"untiered-long", Tokens{Input: 100, Output: 10}, (100*1 + 10*2) / 1e6, true},
		{"untiered-long", Tokens{Input: 101, Output: 10}, 0, false},
		{"unknown-model", Tokens{Input: 10}, 0, false},
	} {
		got, ok := tab.Cost(tc.model, tc.n)
		if ok != tc.ok || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Cost(%q, %+v) = %v, %v; want %v, %v", tc.model, tc.n, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	for name, data := range map[string]string{
		"no version":     `{"models": {}}`,
		"negative price": `{"version": "v", "models": {"m": {"input": -1, "output": 1}}}`,
		"unknown field":  `{"version": "v", "models": {"m": {"input": 1, "output": 1, "outptu": 2}}}`,
		"not json":       `version: v`,
		"bad threshold":  `{"version": "v", "models": {"m": {"input": 1, "output": 1, "long_prompt": {"threshold_tokens": 0}}}}`,
		"nested tiers":   `{"version": "v", "models": {"m": {"input": 1, "output": 1, "long_prompt": {"threshold_tokens": 5, "price": {"input": 1, "output": 1, "long_prompt": {"threshold_tokens": 9}}}}}}`,
		"bad long price": `{"version": "v", "models": {"m": {"input": 1, "output": 1, "long_prompt": {"threshold_tokens": 5, "price": {"input": -2, "output": 1}}}}}`,
	} {
		if _, err := Parse([]byte(data)); err == nil {
			t.Errorf("%s: Parse accepted %s", name, data)
		}
	}
	var nilTable *Table
	if err := nilTable.Validate(); err == nil {
		t.Error("a nil table validated")
	}
	if _, ok := nilTable.Cost("gpt-4o", Tokens{Input: 1}); ok {
		t.Error("a nil table knew a price")
	}
}
