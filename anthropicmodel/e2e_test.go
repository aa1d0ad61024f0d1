package anthropicmodel

import (
	"math"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/providertest"
)

// endToEnd is a run through the Runner against the fake server (see
// providertest.EndToEnd); every request the server gets must keep the turns
// the API wants.
var endToEnd = providertest.EndToEnd{
	Script: []response{
		{Status: 200, Fixture: "empty_content_tool_use.json"},
		{Status: 200, Fixture: "tool_use.json"},
		{Status: 200, Fixture: "text.json"},
	},
	Tool: "get_weather", Input: "Weather in San Francisco?", Answer: "Hi! My name is Claude.",
	CheckRequest: checkTurns,
	ToolResult:   `{"tool_use_id":"toolu_01A09q90qw90lq917835lq9","content":[{"text":"Sunny in San Francisco, CA","type":"text"}],"type":"tool_result"}`,
	CheckTotals:  checkTotals,
}

func checkTotals(t *testing.T, got polyloop.Totals) {
	t.Helper()
	// empty_content_tool_use.json (claude-opus-5-5: two tool calls, a batch
	// of two actions the weather tool does not know), tool_use.json
	// (claude-haiku-4-5), text.json (claude-sonnet-5-5, with cache reads and
	// writes).
	cost := (1200*4.00+140*20.00)/1e6 + (472*1.00+89*5.00)/1e6 + (2095*2.00+8000*0.10+1000*2.50+503*10.00)/1e6
	in, out := int64(1200+472+2095+8000+1000), int64(140+89+503)
	if got.Steps != 3 || got.ModelCalls != 3 || got.Actions != 3 || got.InputTokens != in ||
		got.OutputTokens != out || got.CostUnknown || math.Abs(got.CostUSD-cost) > 1e-12 {
		t.Errorf("totals %+v; want 3 steps, 3 calls, 3 actions, %d in, %d out, cost %v known", got, in, out, cost)
	}
}
