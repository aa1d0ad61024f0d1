package openaimodel

import (
	"math"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/providertest"
)

// TestEndToEnd runs an agent through the Runner against the fake server: a
// reply with two tool calls (Invalid: one per turn), one tool call
// (executed), then an answer. The run completes, the totals are the sums of
// the fixtures' usage and price-table costs, every request the server got
// answers each tool call, and the API key from the environment is in no
// stored record.
func TestEndToEnd(t *testing.T) {
	srv := newFakeServer(t,
		response{Status: 200, Fixture: "empty_content_tool_calls.json"},
		response{Status: 200, Fixture: "tool_call.json"},
		response{Status: 200, Fixture: "text.json"})
	res, store := harness.RunAgent(t, srv, harness.WeatherAgent("get_current_weather"), "Weather in Boston?")
	if res.StopReason != polyloop.StopCompleted || res.FinalAnswer != "The capital of France is Paris." {
		t.Fatalf("result %+v", res)
	}
	checkTotals(t, res.Totals)
	for i := range srv.Count() {
		checkToolPairing(t, srv.Request(i).Body)
	}
	if !strings.Contains(string(srv.Request(2).Body), `"content":"Sunny in Boston, MA","tool_call_id":"call_abc123"`) {
		t.Errorf("the observation was not sent as the tool result: %s", srv.Request(2).Body)
	}
	records, _ := providertest.StoredRun(t, store)
	providertest.CheckStoredTotals(t, records, checkTotals)
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
