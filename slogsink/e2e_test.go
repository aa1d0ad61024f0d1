package slogsink_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/slogsink"
	"github.com/polyloop/polyloop/toolcallparser"
)

// e2eExecutor is a small environment: lookup works, db is down.
type e2eExecutor struct{}

func (e2eExecutor) Execute(_ context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	switch a.Tool {
	case "lookup":
		return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "value for " + string(a.Args)}, nil
	case "db":
		return polyloop.ActionOutcome{Status: polyloop.EnvError, Observation: "dial tcp 127.0.0.1:5432: connection refused"}, nil
	}
	return polyloop.ActionOutcome{Status: polyloop.NotExecuted, Observation: "no tool " + a.Tool}, nil
}

// runE2E runs the script with a JSON-lines slogsink and returns the result
// and the parsed lines.
func runE2E(t *testing.T, turns ...scriptmodel.Turn) (polyloop.RunResult, []map[string]any) {
	t.Helper()
	var buf bytes.Buffer
	sink := slogsink.New(slog.New(slog.NewJSONHandler(&buf, nil)), slogsink.Options{})
	r := &polyloop.Runner{Model: scriptmodel.New(turns...), Parser: toolcallparser.New(toolcallparser.Options{}),
		Executor: e2eExecutor{}, Store: memstore.New(), Sinks: []polyloop.EventSink{sink}}
	agent := polyloop.Agent{Name: "e2e", Tools: []polyloop.ToolSpec{{Name: "lookup"}, {Name: "db"}},
		Limits: polyloop.Limits{MaxSteps: 6}, Model: polyloop.ModelParams{Model: "script-1"}}
	res, err := r.Run(context.Background(), "", agent, polyloop.Task{Input: "secret-free task"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(res.Sinks) != 0 {
		t.Errorf("sink failures reported: %+v", res.Sinks)
	}
	lines := parseLines(t, buf.String())
	for i, l := range lines {
		want(t, l, map[string]any{"run_id": res.RunID, "agent": "e2e"})
		if i > 0 && l["seq"].(float64) < lines[i-1]["seq"].(float64) {
			t.Errorf("line %d: seq goes back", i)
		}
	}
	if last := lines[len(lines)-1]; last["seq"].(float64) != float64(res.Records-1) {
		t.Errorf("run_finished seq %v; the log has %d records", last["seq"], res.Records)
	}
	return res, lines
}

func kinds(lines []map[string]any) []string {
	var out []string
	for _, l := range lines {
		out = append(out, l["msg"].(string))
	}
	return out
}

func TestE2EEnvErrorRun(t *testing.T) {
	t.Parallel()
	res, lines := runE2E(t,
		scriptmodel.Call("c1", "lookup", map[string]string{"k": "a"}),
		scriptmodel.Call("c2", "db", map[string]string{"sql": "select 1"}))
	if res.StopReason != polyloop.StopEnvError {
		t.Fatalf("stop reason %s", res.StopReason)
	}
	step := []string{"step_started", "model_call_started", "model_call_finished", "action_started", "action_finished", "step_completed"}
	wantKinds := append(append(append([]string{"run_started"}, step...), step...), "run_finished")
	if got := kinds(lines); !slices.Equal(got, wantKinds) {
		t.Fatalf("events %v\nwant %v", got, wantKinds)
	}
	dbDone, end := lines[11], lines[13]
	want(t, dbDone, map[string]any{"level": "ERROR", "step": 2, "outcome.status": "env_error",
		"outcome.observation":     "dial tcp 127.0.0.1:5432: connection refused",
		"step_record.observation": polyloop.DefaultEnvError, "step_record.synthetic": true})
	want(t, end, map[string]any{"level": "ERROR", "stop_reason": "env_error", "totals.steps": 2, "totals.actions": 2})
	want(t, lines[5], map[string]any{"level": "INFO", "outcome.status": "executed", "step_record.observation": `value for {"k":"a"}`})
}

func TestE2ELLMErrorRun(t *testing.T) {
	t.Parallel()
	res, lines := runE2E(t, scriptmodel.Fail(errors.New("HTTP 503: overloaded")))
	if res.StopReason != polyloop.StopLLMError {
		t.Fatalf("stop reason %s", res.StopReason)
	}
	wantKinds := []string{"run_started", "step_started", "model_call_started", "model_call_finished", "run_finished"}
	if got := kinds(lines); !slices.Equal(got, wantKinds) {
		t.Fatalf("events %v; want %v", got, wantKinds)
	}
	want(t, lines[3], map[string]any{"level": "ERROR", "failure.type": "*errors.errorString",
		"failure.message": "HTTP 503: overloaded"})
	absent(t, lines[3], "reply")
	want(t, lines[4], map[string]any{"level": "ERROR", "stop_reason": "llm_error", "totals.model_calls": 1})
}

// A fork's log lines count what the fork spent: its copied steps are
// logged as step_copied, not as model calls whose tokens a reader of the
// log would add to the source's own.
func TestE2EForkCountsItsOwnCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := memstore.New()
	turns := []scriptmodel.Turn{scriptmodel.Call("c1", "lookup", map[string]string{"k": "a"}),
		scriptmodel.Call("c2", "lookup", map[string]string{"k": "b"}), scriptmodel.Reply("done")}
	agent := polyloop.Agent{Name: "e2e", Tools: []polyloop.ToolSpec{{Name: "lookup"}}, Limits: polyloop.Limits{MaxSteps: 6}}
	runner := func(sinks ...polyloop.EventSink) *polyloop.Runner {
		return &polyloop.Runner{Model: scriptmodel.New(turns...), Parser: toolcallparser.New(toolcallparser.Options{}),
			Executor: e2eExecutor{}, Store: store, Sinks: sinks}
	}
	if _, err := runner().Run(ctx, "src", agent, polyloop.Task{Input: "t"}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	res, err := runner(slogsink.New(slog.New(slog.NewJSONHandler(&buf, nil)), slogsink.Options{})).Fork(ctx, "src", 2, "f", agent)
	if err != nil {
		t.Fatal(err)
	}
	var tokens float64
	copied := 0
	for _, l := range parseLines(t, buf.String()) {
		switch l["msg"] {
		case "model_call_finished":
			reply := l["reply"].(map[string]any)
			tokens += reply["input_tokens"].(float64) + reply["output_tokens"].(float64)
		case "step_copied":
			copied++
		}
	}
	if int64(tokens) != res.Totals.Tokens() || copied != 2 {
		t.Fatalf("the log lines count %v tokens and %d copied steps; the fork spent %d tokens and copied 2 steps", tokens, copied, res.Totals.Tokens())
	}
}
