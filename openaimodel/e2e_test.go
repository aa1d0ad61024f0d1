package openaimodel

import (
	"math"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/providertest"
)

// endToEnd is a run through the Runner against the fake server (see
// providertest.EndToEnd); every request the server gets must answer each
// tool call.
var endToEnd = providertest.EndToEnd{
	Script: []response{
		{Status: 200, Fixture: "empty_content_tool_calls.json"},
		{Status: 200, Fixture: "tool_call.json"},
		{Status: 200, Fixture: "text.json"},
	},
	Tool: "get_current_weather", Input: "Weather in Boston?", Answer: "The capital of France is Paris.",
	CheckRequest: checkToolPairing,
	ToolResult:   `"content":"Sunny in Boston, MA","tool_call_id":"call_abc123"`,
	CheckTotals:  checkTotals,
}

func checkTotals(t *testing.T, got polyloop.Totals) {
	t.Helper()
	// empty_content_tool_calls.json (o4-mini), tool_call.json
	// (gpt-4o-mini), text.json (gpt-4o).
	cost := (272*1.10+128*0.275+250*4.40)/1e6 + (82*0.15+17*0.60)/1e6 + (93*2.50+1024*1.25+46*10.00)/1e6
	if got.Steps != 3 || got.ModelCalls != 3 || got.Actions != 1 || got.InputTokens != 400+82+1117 ||
		got.OutputTokens != 250+17+46 || got.CostUnknown || math.Abs(got.CostUSD-cost) > 1e-12 {
		t.Errorf("totals %+v; want 3 steps, 3 calls, 1 action, %d in, %d out, cost %v known", got, 400+82+1117, 250+17+46, cost)
	}
}
