package providertest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/golden"
	"github.com/polyloop/polyloop/internal/provider"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/toolcallparser"
)

// WeatherExec is a small environment with one tool, named Tool, that says
// it is sunny wherever its location argument says.
type WeatherExec struct{ Tool string }

// Execute implements polyloop.ActionExecutor.
func (w WeatherExec) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	if err := ctx.Err(); err != nil {
		return polyloop.ActionOutcome{}, err
	}
	var args struct{ Location string }
	if a.Tool != w.Tool || json.Unmarshal(a.Args, &args) != nil {
		return polyloop.ActionOutcome{Status: polyloop.NotExecuted, Observation: "unknown tool or bad arguments"}, nil
	}
	return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "Sunny in " + args.Location}, nil
}

// WeatherAgent is an agent with WeatherExec's tool, the harness's model and
// one retry.
func (h *Harness[P]) WeatherAgent(tool string) polyloop.Agent {
	return polyloop.Agent{
		Name: "weather", System: "You answer weather questions.",
		Tools:  []polyloop.ToolSpec{{Name: tool, Parameters: json.RawMessage(`{"type":"object","properties":{"location":{"type":"string"}}}`), Replay: polyloop.ReplaySafe}},
		Limits: polyloop.Limits{MaxSteps: 5},
		Model:  polyloop.ModelParams{Model: h.Model, Retries: 1, RetryBackoffMS: 1},
	}
}

// RunAgent runs agent as run-1 on input through a Runner with a client of
// srv whose key, SecretKey, comes from the environment (so the test must not
// be parallel), the tool-call parser checking arguments against the agent's
// tools, WeatherExec for the agent's first tool, and a memstore, which it
// returns.
func (h *Harness[P]) RunAgent(t *testing.T, srv *Server, agent polyloop.Agent, input string) (polyloop.RunResult, *memstore.Store) {
	t.Helper()
	t.Setenv(h.KeyEnv, SecretKey)
	client := h.must(t, Options{BaseURL: srv.URL()})
	var exec WeatherExec
	if len(agent.Tools) > 0 {
		exec.Tool = agent.Tools[0].Name
	}
	store := memstore.New()
	r := &polyloop.Runner{Model: client, Parser: toolcallparser.New(toolcallparser.Options{Tools: agent.Tools}), Executor: exec, Store: store}
	res, err := r.Run(context.Background(), "run-1", agent, polyloop.Task{Input: input})
	if err != nil {
		t.Fatal(err)
	}
	return res, store
}

// StoredRun reads run-1's records from store, and fails the test if there
// are none or if SecretKey is in them.
func StoredRun(t *testing.T, store *memstore.Store) (records []polyloop.Record, raw string) {
	t.Helper()
	log, err := polyloop.ReadLog(context.Background(), store, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := polyloop.EncodeRecords(log.Records)
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Records) == 0 || strings.Contains(string(b), SecretKey) {
		t.Errorf("the API key is in the stored records (or there are none): %d records", len(log.Records))
	}
	return log.Records, string(b)
}

// CheckStoredTotals checks the totals of the RunFinished record that ends
// records with check.
func CheckStoredTotals(t *testing.T, records []polyloop.Record, check func(*testing.T, polyloop.Totals)) {
	t.Helper()
	fin, ok := records[len(records)-1].Body.(*polyloop.RunFinished)
	if !ok {
		t.Fatalf("the last record is %T, not RunFinished", records[len(records)-1].Body)
	}
	check(t, fin.Totals)
}

// TestEndToEndFailure checks that rejected401, a 401 whose message echoes
// the key, ends a run with llm_error, and that the stored diagnostic keeps
// the failure's fields (want, e.g. `"http_status":"401"`) but not the key.
// It sets the key's environment variable, so it must not run in parallel.
func TestEndToEndFailure[P provider.Package](t *testing.T, h Harness[P], rejected401 Response, want []string) {
	srv := h.Serve(t, rejected401)
	res, store := h.RunAgent(t, srv, polyloop.Agent{Name: "a", Model: polyloop.ModelParams{Model: h.Model}}, "hi")
	if res.StopReason != polyloop.StopLLMError {
		t.Fatalf("stop reason %s, want llm_error", res.StopReason)
	}
	_, raw := StoredRun(t, store)
	for _, w := range want {
		if !strings.Contains(raw, w) {
			t.Errorf("the stored failure lacks %s", w)
		}
	}
}

// EndToEnd is a successful run of the weather agent through the Runner: the
// server answers with Script — a reply with two tool calls for Tool (a
// batch: both run, and both results go back in the next request), a reply
// with one tool call for Tool, and an answer.
type EndToEnd struct {
	Script []Response
	// Tool is the weather tool's name; Input the task; Answer the final
	// answer.
	Tool, Input, Answer string
	// CheckRequest checks each request body against the API's rules.
	CheckRequest func(t *testing.T, body []byte)
	// BatchCallIDs are the ids of the first reply's two tool calls, and
	// BatchResults the two results as the second request body carries them
	// (the observations sent as the results of those calls), in that order.
	BatchCallIDs []string
	BatchResults []string
	// ToolResult is in the third request body: the observation sent as the
	// single call's result.
	ToolResult string
	// CheckTotals checks the run's totals, from the fixtures' usage and the
	// price table.
	CheckTotals func(t *testing.T, got polyloop.Totals)
}

// BatchGolden is the golden file, under the client's testdata/golden, of
// the request that carries the results of the end-to-end run's batch.
const BatchGolden = "end_to_end_batch_results.json"

// TestEndToEnd runs e: the run completes with e.Answer, its totals and the
// stored ones pass e.CheckTotals, every request passes e.CheckRequest, the
// two calls of the first reply both run (two action intents, both
// executed) and their results go back in the second request in the calls'
// order (its body is pinned by testdata/golden/BatchGolden), the single
// call's observation is sent as its result, and the API key from the
// environment is in no stored record. It sets the key's environment
// variable, so it must not run in parallel.
func TestEndToEnd[P provider.Package](t *testing.T, h Harness[P], e EndToEnd) {
	srv := h.Serve(t, e.Script...)
	res, store := h.RunAgent(t, srv, h.WeatherAgent(e.Tool), e.Input)
	if res.StopReason != polyloop.StopCompleted || res.FinalAnswer != e.Answer {
		t.Fatalf("result %+v", res)
	}
	e.CheckTotals(t, res.Totals)
	if srv.Count() != 3 {
		t.Fatalf("%d requests, want 3", srv.Count())
	}
	for i := range srv.Count() {
		e.CheckRequest(t, srv.Request(i).Body)
	}
	batch := srv.Request(1).Body
	checkInOrder(t, batch, e.BatchResults)
	golden.File(t, filepath.Join("testdata", "golden", BatchGolden), PrettyJSON(t, batch))
	if body := srv.Request(2).Body; !strings.Contains(string(body), e.ToolResult) {
		t.Errorf("the observation was not sent as the tool result: %s", body)
	}
	records, _ := StoredRun(t, store)
	checkBatchRan(t, polyloop.RunLog{RunID: "run-1", Records: records}, e.BatchCallIDs)
	CheckStoredTotals(t, records, e.CheckTotals)
}

// checkInOrder checks that body holds each of want, in that order.
func checkInOrder(t *testing.T, body []byte, want []string) {
	t.Helper()
	if len(want) != 2 {
		t.Fatalf("EndToEnd.BatchResults has %d results, want the 2 of the batch", len(want))
	}
	at := 0
	for i, w := range want {
		j := strings.Index(string(body[at:]), w)
		if j < 0 {
			t.Errorf("the request after the batch does not carry result %d (%s) after the earlier ones: %s", i, w, body)
			return
		}
		at += j + len(w)
	}
}

// checkBatchRan checks that step 1 of the log ran a batch of the two calls
// ids, in order, both executed.
func checkBatchRan(t *testing.T, log polyloop.RunLog, ids []string) {
	t.Helper()
	var intents []*polyloop.ActionIntent
	for _, in := range log.ActionIntents() {
		if in.Step == 1 {
			intents = append(intents, in)
		}
	}
	if len(intents) != len(ids) {
		t.Fatalf("step 1 has %d action intents, want one per tool call %v", len(intents), ids)
	}
	for i, in := range intents {
		if in.Action.CallID != ids[i] || in.Index != i || in.BatchSize() != len(ids) {
			t.Errorf("action %d of step 1 is call %s, %d of %d; want call %s, %d of %d", i, in.Action.CallID, in.Index, in.BatchSize(), ids[i], i, len(ids))
		}
	}
	var tools []polyloop.Message
	for _, m := range polyloop.History(log) {
		if m.Role == polyloop.RoleTool && len(tools) < len(ids) {
			tools = append(tools, m)
		}
	}
	for i, m := range tools {
		if m.ToolCallID != ids[i] || m.Synthetic || !strings.HasPrefix(m.Content, "Sunny in ") {
			t.Errorf("history: result %d of the batch %+v, want the executed observation of call %s", i, m, ids[i])
		}
	}
}
