package anthropicmodel

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/toolcallparser"
)

// weatherExec is a small environment with one tool.
type weatherExec struct{}

func (weatherExec) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	if err := ctx.Err(); err != nil {
		return polyloop.ActionOutcome{}, err
	}
	var args struct{ Location string }
	if a.Tool != "get_weather" || json.Unmarshal(a.Args, &args) != nil {
		return polyloop.ActionOutcome{Status: polyloop.NotExecuted, Observation: "unknown tool or bad arguments"}, nil
	}
	return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "Sunny in " + args.Location}, nil
}

// TestEndToEnd runs an agent through the Runner against the fake server: a
// reply with two tool calls (Invalid: one per turn), one tool call
// (executed), then an answer. The run completes, the totals are the sums of
// the fixtures' usage and price-table costs, every request the server got
// answers each tool call, and the API key from the environment is in no
// stored record.
func TestEndToEnd(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", secretKey)
	srv := newFakeServer(t,
		response{Status: 200, Fixture: "empty_content_tool_use.json"},
		response{Status: 200, Fixture: "tool_use.json"},
		response{Status: 200, Fixture: "text.json"})
	client, err := New(Options{BaseURL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	store := memstore.New()
	r := &polyloop.Runner{Model: client, Parser: toolcallparser.New(toolcallparser.Options{}), Executor: weatherExec{}, Store: store}
	agent := polyloop.Agent{
		Name: "weather", System: "You answer weather questions.",
		Tools:  []polyloop.ToolSpec{{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}}}`), Replay: polyloop.ReplaySafe}},
		Limits: polyloop.Limits{MaxSteps: 5},
		Model:  polyloop.ModelParams{Model: "claude-sonnet-5-5", Retries: 1, RetryBackoffMS: 1},
	}
	res, err := r.Run(context.Background(), "run-1", agent, polyloop.Task{Input: "Weather in San Francisco?"})
	if err != nil {
		t.Fatal(err)
	}
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
	checkNoKeyInLog(t, store)
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

func checkNoKeyInLog(t *testing.T, store *memstore.Store) {
	t.Helper()
	log, err := store.ReadLog(context.Background(), "run-1")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := polyloop.EncodeRecords(log.Records)
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Records) == 0 || strings.Contains(string(raw), secretKey) {
		t.Errorf("the API key is in the stored records (or there are none): %d records", len(log.Records))
	}
	fin, ok := log.Records[len(log.Records)-1].Body.(*polyloop.RunFinished)
	if !ok {
		t.Fatalf("the last record is %T, not RunFinished", log.Records[len(log.Records)-1].Body)
	}
	checkTotals(t, fin.Totals)
}

// TestEndToEndFailure: a 401 whose message echoes the key ends the run with
// llm_error; the stored diagnostic keeps the status and code, not the key.
func TestEndToEndFailure(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", secretKey)
	srv := newFakeServer(t, response{Status: 401, Fixture: "error_401.json", Header: map[string]string{"request-id": "req_401"}})
	client, err := New(Options{BaseURL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	store := memstore.New()
	r := &polyloop.Runner{Model: client, Parser: toolcallparser.New(toolcallparser.Options{}), Executor: weatherExec{}, Store: store}
	res, err := r.Run(context.Background(), "run-1", polyloop.Agent{Name: "a", Model: polyloop.ModelParams{Model: "claude-sonnet-5-5"}},
		polyloop.Task{Input: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != polyloop.StopLLMError {
		t.Fatalf("stop reason %s, want llm_error", res.StopReason)
	}
	log, _ := store.ReadLog(context.Background(), "run-1")
	raw, _ := polyloop.EncodeRecords(log.Records)
	if strings.Contains(string(raw), secretKey) {
		t.Error("the API key is in the stored records")
	}
	for _, want := range []string{`"http_status":"401"`, `"provider_type":"authentication_error"`, `"request_id":"req_401"`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("the stored failure lacks %s", want)
		}
	}
}
