package anthropicmodel

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
// keeps the turns the API wants, and the API key from the environment is in
// no stored record.
func TestEndToEnd(t *testing.T) {
	srv := newFakeServer(t,
		response{Status: 200, Fixture: "empty_content_tool_use.json"},
		response{Status: 200, Fixture: "tool_use.json"},
		response{Status: 200, Fixture: "text.json"})
	res, store := harness.RunAgent(t, srv, harness.WeatherAgent("get_weather"), "Weather in San Francisco?")
	if res.StopReason != polyloop.StopCompleted || res.FinalAnswer != "Hi! My name is Claude." {
		t.Fatalf("result %+v", res)
	}
	checkTotals(t, res.Totals)
	for i := range srv.Count() {
		checkTurns(t, srv.Request(i).Body)
	}
	if !strings.Contains(string(srv.Request(2).Body), `{"tool_use_id":"toolu_01A09q90qw90lq917835lq9","content":[{"text":"Sunny in San Francisco, CA","type":"text"}],"type":"tool_result"}`) {
		t.Errorf("the observation was not sent as the tool result: %s", srv.Request(2).Body)
	}
	records, _ := providertest.StoredRun(t, store)
	providertest.CheckStoredTotals(t, records, checkTotals)
}

func checkTotals(t *testing.T, got polyloop.Totals) {
	t.Helper()
	// empty_content_tool_use.json (claude-opus-5-5), tool_use.json
	// (claude-haiku-4-5), text.json (claude-sonnet-5-5, with cache reads and
	// writes).
	cost := (1200*4.00+140*20.00)/1e6 + (472*1.00+89*5.00)/1e6 + (2095*2.00+8000*0.10+1000*2.50+503*10.00)/1e6
	in, out := int64(1200+472+2095+8000+1000), int64(140+89+503)
	if got.Steps != 3 || got.ModelCalls != 3 || got.Actions != 1 || got.InputTokens != in ||
		got.OutputTokens != out || got.CostUnknown || math.Abs(got.CostUSD-cost) > 1e-12 {
		t.Errorf("totals %+v; want 3 steps, 3 calls, 1 action, %d in, %d out, cost %v known", got, in, out, cost)
	}
}
