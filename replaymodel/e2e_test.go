package replaymodel_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/replaymodel"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/toolcallparser"
)

// fileExec is a small environment: "read" returns a file's content, with a
// version suffix so that a "new executor" gives other observations.
type fileExec struct{ version string }

func (e fileExec) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	if err := ctx.Err(); err != nil {
		return polyloop.ActionOutcome{}, err
	}
	var args struct{ Path string }
	if a.Tool != "read" || json.Unmarshal(a.Args, &args) != nil {
		return polyloop.ActionOutcome{Status: polyloop.NotExecuted, Observation: "unknown tool or bad args"}, nil
	}
	return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "content of " + args.Path + e.version}, nil
}

var e2eAgent = polyloop.Agent{
	Name: "reader", System: "You read files.", Tools: []polyloop.ToolSpec{readSpec},
	Limits: polyloop.Limits{MaxSteps: 10}, Model: polyloop.ModelParams{Model: "gpt-test"},
}

var e2eTask = polyloop.Task{Input: "Compare a.txt and b.txt."}

// record runs the scripted model once and returns the store holding the
// recorded run "rec".
func record(t *testing.T, turns ...scriptmodel.Turn) *memstore.Store {
	t.Helper()
	store := memstore.New()
	r := &polyloop.Runner{
		Model:    scriptmodel.NewWithOptions(scriptmodel.Options{CostPerToken: 1e-6, Model: "gpt-test"}, turns...),
		Parser:   toolcallparser.New(toolcallparser.Options{}),
		Executor: fileExec{}, Store: store,
	}
	if _, err := r.Run(context.Background(), "rec", e2eAgent, e2eTask); err != nil {
		t.Fatal(err)
	}
	return store
}

var e2eTurns = []scriptmodel.Turn{
	scriptmodel.Call("c1", "read", map[string]string{"path": "a.txt"}),
	scriptmodel.Call("c2", "read", map[string]string{"path": "b.txt"}),
	scriptmodel.Reply("They differ."),
}

// replay runs the recorded run again as "replay" with a replay client.
func replay(t *testing.T, store *memstore.Store, m replaymodel.Match, parser polyloop.DecisionParser, exec polyloop.ActionExecutor) (polyloop.RunResult, polyloop.RunLog) {
	t.Helper()
	ctx := context.Background()
	log, err := polyloop.ReadLog(ctx, store, "rec")
	if err != nil {
		t.Fatal(err)
	}
	client, err := replaymodel.New(log, replaymodel.Options{Match: m})
	if err != nil {
		t.Fatal(err)
	}
	r := &polyloop.Runner{Model: client, Parser: parser, Executor: exec, Store: store}
	res, err := r.Run(ctx, "replay", e2eAgent, e2eTask)
	if err != nil {
		t.Fatal(err)
	}
	out, err := polyloop.ReadLog(ctx, store, "replay")
	if err != nil {
		t.Fatal(err)
	}
	return res, out
}

func TestReplayReproducesTheRun(t *testing.T) {
	t.Parallel()
	for _, m := range []replaymodel.Match{replaymodel.MatchStructure, replaymodel.MatchExact, replaymodel.MatchSteps} {
		store := record(t, e2eTurns...)
		res, log := replay(t, store, m, toolcallparser.New(toolcallparser.Options{}), fileExec{})
		rec, _ := polyloop.ReadLog(context.Background(), store, "rec")
		if res.StopReason != polyloop.StopCompleted || res.FinalAnswer != "They differ." {
			t.Fatalf("%s: replay ended %s %q, want completed with the recorded answer", m, res.StopReason, res.FinalAnswer)
		}
		if !reflect.DeepEqual(stepsOf(log), stepsOf(rec)) {
			t.Errorf("%s: replayed steps differ:\n%+v\nrecorded\n%+v", m, stepsOf(log), stepsOf(rec))
		}
		if got, want := log.Finished().Totals, rec.Finished().Totals; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: totals %+v, want the recorded %+v", m, got, want)
		}
	}
}

func stepsOf(log polyloop.RunLog) []polyloop.StepCompleted {
	var out []polyloop.StepCompleted
	for _, s := range log.Steps() {
		out = append(out, *s)
	}
	return out
}

// A new parser that refuses the final text makes step 3 Invalid; the
// recorded run has no step 4, so the replay ends with llm_error there.
func TestReplayNewParserRunsOutOfReplies(t *testing.T) {
	t.Parallel()
	store := record(t, e2eTurns...)
	res, log := replay(t, store, replaymodel.MatchStructure, toolcallparser.New(toolcallparser.Options{RequireAction: true}), fileExec{})
	if res.StopReason != polyloop.StopLLMError {
		t.Fatalf("stop reason %s, want llm_error", res.StopReason)
	}
	steps := log.Steps()
	if len(steps) != 3 || steps[2].Decision != polyloop.DecisionInvalid {
		t.Fatalf("steps %+v, want three with the last Invalid", steps)
	}
	last := lastResult(log)
	if last.Step != 4 || last.Failure == nil || !strings.Contains(last.Failure.Message, "no model result for step 4") {
		t.Fatalf("last model result %+v, want step 4 failing with the exhausted replay", last)
	}
}

// A new executor with other observations keeps the trajectory under
// MatchStructure and diverges at step 2 under MatchExact.
func TestReplayNewExecutor(t *testing.T) {
	t.Parallel()
	store := record(t, e2eTurns...)
	res, _ := replay(t, store, replaymodel.MatchStructure, toolcallparser.New(toolcallparser.Options{}), fileExec{version: " (v2)"})
	if res.StopReason != polyloop.StopCompleted {
		t.Fatalf("structure: stop reason %s, want completed", res.StopReason)
	}

	store = record(t, e2eTurns...)
	res, log := replay(t, store, replaymodel.MatchExact, toolcallparser.New(toolcallparser.Options{}), fileExec{version: " (v2)"})
	if res.StopReason != polyloop.StopLLMError {
		t.Fatalf("exact: stop reason %s, want llm_error", res.StopReason)
	}
	last := lastResult(log)
	if last.Step != 2 || last.Failure == nil || last.Failure.Fields["replay_diverged"] != "content" || last.Failure.Fields["replay_message"] != "3" {
		t.Fatalf("exact: last model result %+v, want step 2 diverging in the content of message 3", last)
	}
}

// A recorded model failure is replayed: the replay ends with llm_error at
// the same step.
func TestReplayRecordedFailure(t *testing.T) {
	t.Parallel()
	store := record(t, e2eTurns[0], scriptmodel.Fail(errors.New("provider overloaded")))
	res, log := replay(t, store, replaymodel.MatchStructure, toolcallparser.New(toolcallparser.Options{}), fileExec{})
	if res.StopReason != polyloop.StopLLMError {
		t.Fatalf("stop reason %s, want llm_error", res.StopReason)
	}
	last := lastResult(log)
	if last.Step != 2 || last.Failure == nil || !strings.Contains(last.Failure.Message, "provider overloaded") || last.Failure.Fields["replay_step"] != "2" {
		t.Fatalf("last model result %+v, want step 2 replaying the recorded failure", last)
	}
}

func lastResult(log polyloop.RunLog) *polyloop.ModelCallResult {
	rs := log.ModelResults()
	if len(rs) == 0 {
		return &polyloop.ModelCallResult{}
	}
	return rs[len(rs)-1]
}

// An exact replay of a fork whose agent changed the system prompt meets its
// copied steps as they ran, under the source's prompt (the fork's log says
// so, the source deleted): with the source's agent it departs only at the
// fork's own first step, and with the fork's agent at step 1, which the
// model saw with the source's prompt.
func TestExactReplayOfAForkWithAChangedPrompt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := record(t, e2eTurns...)
	changed := e2eAgent
	changed.System = "You read files carefully."
	r := &polyloop.Runner{
		Model:    scriptmodel.NewWithOptions(scriptmodel.Options{CostPerToken: 1e-6, Model: "gpt-test"}, e2eTurns...),
		Parser:   toolcallparser.New(toolcallparser.Options{}),
		Executor: fileExec{}, Store: store,
	}
	if res, err := r.Fork(ctx, "rec", 2, "fork", changed); err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatal(res.StopReason, err)
	}
	fork, err := polyloop.ReadLog(ctx, store, "fork")
	if err != nil {
		t.Fatal(err)
	}
	alone := memstore.New() // the source is gone
	alone.Put("fork", fork.Records)
	for _, tc := range []struct {
		name  string
		agent polyloop.Agent
		step  int
	}{{"the source's agent", e2eAgent, 3}, {"the fork's agent", changed, 1}} {
		client, err := replaymodel.New(fork, replaymodel.Options{Match: replaymodel.MatchExact})
		if err != nil {
			t.Fatal(err)
		}
		r := &polyloop.Runner{Model: client, Parser: toolcallparser.New(toolcallparser.Options{}), Executor: fileExec{}, Store: alone}
		id := "replay " + tc.name
		res, err := r.Run(ctx, id, tc.agent, e2eTask)
		if err != nil {
			t.Fatal(err)
		}
		log, _ := polyloop.ReadLog(ctx, alone, id)
		last := lastResult(log)
		if res.StopReason != polyloop.StopLLMError || last.Step != tc.step || last.Failure == nil || !strings.Contains(last.Failure.Message, "at message 0 (content)") {
			t.Errorf("%s: replay stopped %s, last result %+v; want a divergence in the system prompt at step %d", tc.name, res.StopReason, last, tc.step)
		}
	}
}
