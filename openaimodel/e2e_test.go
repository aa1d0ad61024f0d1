package openaimodel

import (
	"math"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/providertest"
)

// endToEnd is a run through the Runner against the fake server (see
// providertest.EndToEnd); every request the server gets must answer each
// tool call, one tool message per call id right after its assistant
// message.
var endToEnd = providertest.EndToEnd{
	Script: []response{
		{Status: 200, Fixture: "two_tool_calls.json", SSE: "two_tool_calls.sse"},
		{Status: 200, Fixture: "tool_call.json", SSE: "tool_call.sse"},
		{Status: 200, Fixture: "text.json", SSE: "text.sse"},
	},
	Tool: "get_current_weather", Input: "Weather in Boston and in Paris?", Answer: "The capital of France is Paris.",
	CheckRequest: checkToolPairing,
	BatchCallIDs: []string{"call_boston", "call_paris"},
	BatchResults: []string{
		`{"content":"Sunny in Boston, MA","tool_call_id":"call_boston","role":"tool"}`,
		`{"content":"Sunny in Paris, France","tool_call_id":"call_paris","role":"tool"}`,
	},
	ToolResult:  `"content":"Sunny in Boston, MA","tool_call_id":"call_abc123"`,
	CheckTotals: checkTotals,
}

func checkTotals(t *testing.T, got polyloop.Totals) {
	t.Helper()
	// two_tool_calls.json and tool_call.json (gpt-4o-mini), text.json
	// (gpt-4o).
	cost := (90*0.15+40*0.60)/1e6 + (82*0.15+17*0.60)/1e6 + (93*2.50+1024*1.25+46*10.00)/1e6
	in, out := int64(90+82+1117), int64(40+17+46)
	if got.Steps != 3 || got.ModelCalls != 3 || got.Actions != 3 || got.InputTokens != in ||
		got.OutputTokens != out || got.CostUnknown || math.Abs(got.CostUSD-cost) > 1e-12 {
		t.Errorf("totals %+v; want 3 steps, 3 calls, 3 actions, %d in, %d out, cost %v known", got, in, out, cost)
	}
}
