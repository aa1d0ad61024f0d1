package anthropicmodel

import (
	"math"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/providertest"
)

// endToEnd is a run through the Runner against the fake server (see
// providertest.EndToEnd); every request the server gets must keep the turns
// the API wants: each tool_use answered by a tool_result block at the start
// of the next user turn, in order.
var endToEnd = providertest.EndToEnd{
	Script: []response{
		{Status: 200, Fixture: "two_tool_uses.json", SSE: "two_tool_uses.sse"},
		{Status: 200, Fixture: "tool_use.json", SSE: "tool_use.sse"},
		{Status: 200, Fixture: "text.json", SSE: "text.sse"},
	},
	Tool: "get_weather", Input: "Weather in Boston and in Paris?", Answer: "Hi! My name is Claude.",
	CheckRequest: checkTurns,
	BatchCallIDs: []string{"toolu_01Boston", "toolu_02Paris"},
	BatchResults: []string{
		// One user turn opening with both tool_result blocks, in order.
		`{"content":[{"tool_use_id":"toolu_01Boston","content":[{"text":"Sunny in Boston, MA","type":"text"}],"type":"tool_result"}`,
		`{"tool_use_id":"toolu_02Paris","content":[{"text":"Sunny in Paris, France","type":"text"}],"type":"tool_result"}],"role":"user"}`,
	},
	ToolResult:  `{"tool_use_id":"toolu_01A09q90qw90lq917835lq9","content":[{"text":"Sunny in San Francisco, CA","type":"text"}],"type":"tool_result"}`,
	CheckTotals: checkTotals,
}

func checkTotals(t *testing.T, got polyloop.Totals) {
	t.Helper()
	// two_tool_uses.json and tool_use.json (claude-haiku-4-5), text.json
	// (claude-sonnet-5-5, with cache reads and writes).
	cost := (500*1.00+120*5.00)/1e6 + (472*1.00+89*5.00)/1e6 + (2095*2.00+8000*0.10+1000*2.50+503*10.00)/1e6
	in, out := int64(500+472+2095+8000+1000), int64(120+89+503)
	if got.Steps != 3 || got.ModelCalls != 3 || got.Actions != 3 || got.InputTokens != in ||
		got.OutputTokens != out || got.CostUnknown || math.Abs(got.CostUSD-cost) > 1e-12 {
		t.Errorf("totals %+v; want 3 steps, 3 calls, 3 actions, %d in, %d out, cost %v known", got, in, out, cost)
	}
}
