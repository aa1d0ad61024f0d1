package slogsink_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/diag"
	"github.com/polyloop/polyloop/slogsink"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)

// ev builds an event of the run "run-1" at t0 plus seq seconds.
func ev(kind polyloop.EventKind, seq int64, f func(*polyloop.Event)) polyloop.Event {
	e := polyloop.Event{V: polyloop.EventVersion, Kind: kind, RunID: "run-1", Agent: "researcher",
		Seq: seq, At: t0.Add(time.Duration(seq) * time.Second)}
	if f != nil {
		f(&e)
	}
	return e
}

// notExecutedRun is the event stream of a run whose only action is refused
// and that then hits its step limit.
func notExecutedRun() []polyloop.Event {
	outcome := &polyloop.ActionOutcome{Status: polyloop.NotExecuted, Observation: "no such tool: serch"}
	rec := &polyloop.StepCompleted{Step: 1, ModelCallID: "m1", Decision: polyloop.DecisionAct, SettledAction: polyloop.SettledAction{ResultID: "a1", Outcome: &polyloop.StepOutcome{Status: polyloop.NotExecuted}, Observation: polyloop.DefaultNotExecuted, Synthetic: true}}
	step := func(e *polyloop.Event) { e.Step, e.CallID = 1, "m1" }
	return []polyloop.Event{
		ev(polyloop.EventRunStarted, 0, func(e *polyloop.Event) {
			e.Snapshot = &polyloop.Snapshot{Agent: "researcher", Task: polyloop.Task{Input: "the task text"}}
			e.SnapshotHash = "sha256:abc"
		}),
		ev(polyloop.EventStepStarted, 1, func(e *polyloop.Event) { step(e); e.Attempt = 1 }),
		ev(polyloop.EventModelCallStarted, 1, func(e *polyloop.Event) { step(e); e.Attempt = 1 }),
		ev(polyloop.EventModelCallFinished, 2, func(e *polyloop.Event) {
			step(e)
			e.Reply = &polyloop.ModelReply{Model: "gpt-test", FinishReason: "tool_calls", Text: "calling serch",
				Usage:     polyloop.Usage{InputTokens: 11, OutputTokens: 3, CostUSD: new(0.5)},
				ToolCalls: []polyloop.ToolCall{{ID: "c1", Name: "serch"}}}
		}),
		ev(polyloop.EventActionStarted, 3, func(e *polyloop.Event) {
			step(e)
			e.Attempt, e.ActionID, e.Replay = 1, "a1", polyloop.NeverReplay
			e.Action = &polyloop.Action{CallID: "c1", Tool: "serch", Args: json.RawMessage(`{"q":"x"}`)}
		}),
		ev(polyloop.EventActionFinished, 4, func(e *polyloop.Event) { step(e); e.ActionID, e.Outcome, e.StepRecord = "a1", outcome, rec }),
		ev(polyloop.EventStepCompleted, 4, func(e *polyloop.Event) { step(e); e.StepRecord = rec }),
		ev(polyloop.EventRunFinished, 5, func(e *polyloop.Event) {
			e.StopReason = polyloop.StopMaxSteps
			e.Totals = &polyloop.Totals{Steps: 1, ModelCalls: 1, Actions: 1, InputTokens: 11, OutputTokens: 3, CostUSD: 0.5}
		}),
	}
}

// jsonSink returns a sink writing JSON lines into a buffer, and a function
// parsing the lines written so far.
func jsonSink(t *testing.T, opts slogsink.Options) (*slogsink.Sink, func() []map[string]any) {
	t.Helper()
	var buf bytes.Buffer
	h := slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})
	return slogsink.New(slog.New(h), opts), func() []map[string]any { return parseLines(t, buf.String()) }
}

func parseLines(t testing.TB, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	return lines
}

func emitAll(t *testing.T, s polyloop.EventSink, evs []polyloop.Event) {
	t.Helper()
	for _, e := range evs {
		if err := s.Emit(context.Background(), e); err != nil {
			t.Fatalf("Emit(%s): %v", e.Kind, err)
		}
	}
}

// get follows a dotted path through nested JSON objects.
func get(m map[string]any, path string) any {
	var v any = m
	for _, k := range strings.Split(path, ".") {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = obj[k]
	}
	return v
}

func want(t *testing.T, line map[string]any, fields map[string]any) {
	t.Helper()
	for path, w := range fields {
		if got := get(line, path); fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("%v: %s = %v; want %v", line["msg"], path, got, w)
		}
	}
}

func absent(t *testing.T, line map[string]any, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if got := get(line, p); got != nil {
			t.Errorf("%v: unexpected %s = %v", line["msg"], p, got)
		}
	}
}

func TestJSONLines(t *testing.T) {
	t.Parallel()
	sink, lines := jsonSink(t, slogsink.Options{})
	evs := notExecutedRun()
	emitAll(t, sink, evs)
	got := lines()
	if len(got) != len(evs) {
		t.Fatalf("%d lines for %d events", len(got), len(evs))
	}
	for i, e := range evs {
		want(t, got[i], map[string]any{"msg": e.Kind, "kind": e.Kind, "run_id": "run-1", "agent": "researcher",
			"seq": e.Seq, "v": polyloop.EventVersion, "level": slogsink.LevelOf(e).String(),
			"time": e.At.Format(time.RFC3339Nano)})
	}
	start, reply, action, finished, stepDone, end := got[0], got[3], got[4], got[5], got[6], got[7]
	want(t, start, map[string]any{"snapshot_hash": "sha256:abc"})
	absent(t, start, "snapshot", "step")
	want(t, got[2], map[string]any{"step": 1, "call_id": "m1", "attempt": 1})
	want(t, reply, map[string]any{"reply.model": "gpt-test", "reply.finish_reason": "tool_calls",
		"reply.input_tokens": 11, "reply.output_tokens": 3, "reply.cost_usd": 0.5, "reply.tool_calls": 1,
		"reply.text": "calling serch", "level": "INFO"})
	want(t, action, map[string]any{"action_id": "a1", "action.tool": "serch", "action.call_id": "c1",
		"action.replay": "never_replay", "action.args": `{"q":"x"}`})
	// The audit channel: the executor's own text next to the synthetic one.
	want(t, finished, map[string]any{"level": "WARN", "outcome.status": "not_executed",
		"outcome.observation": "no such tool: serch", "step_record.observation": polyloop.DefaultNotExecuted,
		"step_record.synthetic": true, "step_record.status": "not_executed"})
	want(t, stepDone, map[string]any{"level": "INFO", "step_record.decision": "act"})
	absent(t, stepDone, "outcome")
	want(t, end, map[string]any{"stop_reason": "max_steps", "totals.steps": 1, "totals.input_tokens": 11,
		"totals.cost_usd": 0.5, "level": "INFO"})
}

func TestErrorLevels(t *testing.T) {
	t.Parallel()
	d := diag.From(fmt.Errorf("complete: %w", errors.New("HTTP 503")))
	evs := []polyloop.Event{
		ev(polyloop.EventModelCallFinished, 2, func(e *polyloop.Event) { e.Step, e.CallID, e.Failure = 1, "m1", d }),
		ev(polyloop.EventRunFinished, 3, func(e *polyloop.Event) { e.StopReason, e.Totals = polyloop.StopLLMError, &polyloop.Totals{} }),
		ev(polyloop.EventActionFinished, 4, func(e *polyloop.Event) {
			e.Outcome = &polyloop.ActionOutcome{Status: polyloop.EnvError, Observation: "connection refused"}
		}),
		ev(polyloop.EventRunFinished, 5, func(e *polyloop.Event) { e.StopReason = polyloop.StopEnvError }),
		ev(polyloop.EventRunFinished, 6, func(e *polyloop.Event) { e.StopReason = polyloop.StopResumeStateUnknown }),
	}
	sink, lines := jsonSink(t, slogsink.Options{})
	emitAll(t, sink, evs)
	got := lines()
	want(t, got[0], map[string]any{"level": "ERROR", "failure.type": d.Type, "failure.message": d.Message})
	if causes, ok := get(got[0], "failure.causes").([]any); !ok || len(causes) != 1 {
		t.Errorf("failure.causes = %v; want the wrapped error", get(got[0], "failure.causes"))
	}
	absent(t, got[0], "reply")
	want(t, got[1], map[string]any{"level": "ERROR", "stop_reason": "llm_error"})
	want(t, got[2], map[string]any{"level": "ERROR", "outcome.status": "env_error", "outcome.observation": "connection refused"})
	want(t, got[3], map[string]any{"level": "ERROR", "stop_reason": "env_error"})
	want(t, got[4], map[string]any{"level": "WARN", "stop_reason": "resume_state_unknown"})
}

func TestResumeAndOverride(t *testing.T) {
	t.Parallel()
	snap := &polyloop.Snapshot{Agent: "researcher", Task: polyloop.Task{Input: "the task text"}}
	evs := []polyloop.Event{
		ev(polyloop.EventRunResumed, 7, func(e *polyloop.Event) {
			e.Snapshot, e.SnapshotHash = snap, "sha256:abc"
			e.Plan = &polyloop.ResumePlan{Action: polyloop.PlanStopUnknown, Step: 2, ActionID: "a2", Tool: "pay",
				StopReason: polyloop.StopResumeStateUnknown, Reason: "never_replay action of unknown outcome", LastSeq: 7}
		}),
		ev(polyloop.EventConfigOverridden, 8, func(e *polyloop.Event) {
			e.SnapshotHash = "sha256:def"
			e.Override = &polyloop.ConfigOverride{PreviousHash: "sha256:abc", SnapshotHash: "sha256:def",
				Fields: []string{"model.temperature"}, Snapshot: *snap}
		}),
	}
	for _, include := range []bool{false, true} {
		sink, lines := jsonSink(t, slogsink.Options{IncludeSnapshot: include})
		emitAll(t, sink, evs)
		got := lines()
		want(t, got[0], map[string]any{"plan.action": "stop_unknown", "plan.step": 2, "plan.tool": "pay",
			"plan.action_id": "a2", "plan.last_seq": 7, "plan.stop_reason": "resume_state_unknown", "level": "INFO"})
		want(t, got[1], map[string]any{"level": "WARN", "override.previous_hash": "sha256:abc",
			"override.fields": []any{"model.temperature"}})
		if include {
			want(t, got[0], map[string]any{"snapshot.task.input": "the task text", "snapshot.agent": "researcher"})
			want(t, got[1], map[string]any{"override.snapshot.task.input": "the task text"})
		} else {
			absent(t, got[0], "snapshot")
			absent(t, got[1], "override.snapshot")
		}
	}
}

func TestChildReception(t *testing.T) {
	t.Parallel()
	sink, lines := jsonSink(t, slogsink.Options{})
	emitAll(t, sink, []polyloop.Event{ev(polyloop.EventChildReceived, 9, func(e *polyloop.Event) {
		e.Step = 3
		e.Reception = &polyloop.ChildReception{Step: 3, ChildRunID: "run-1/3/0", StopReason: polyloop.StopEnvError,
			Handler: "Failed", Reception: polyloop.ReceptionFailed, Failure: diag.From(errors.New("handler gave up"))}
	})})
	want(t, lines()[0], map[string]any{"level": "WARN", "reception.child_run_id": "run-1/3/0", "reception.index": 0,
		"reception.reception": "reception_failed", "reception.failure.message": "handler gave up"})
}

func TestTextBounds(t *testing.T) {
	t.Parallel()
	evs := []polyloop.Event{ev(polyloop.EventActionFinished, 4, func(e *polyloop.Event) {
		e.Outcome = &polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "héllo wörld"}
		e.StepRecord = &polyloop.StepCompleted{Step: 1, Decision: polyloop.DecisionAct, SettledAction: polyloop.SettledAction{Observation: "héllo"}}
	})}
	sink, lines := jsonSink(t, slogsink.Options{MaxText: 5})
	emitAll(t, sink, evs)
	want(t, lines()[0], map[string]any{"outcome.observation": "héllo…", "step_record.observation": "héllo"})

	sink, lines = jsonSink(t, slogsink.Options{MaxText: -1})
	emitAll(t, sink, evs)
	absent(t, lines()[0], "outcome.observation", "step_record.observation")
	want(t, lines()[0], map[string]any{"outcome.status": "executed"})
}

// failingHandler fails every Handle, as a handler whose writer broke.
type failingHandler struct {
	slog.Handler
	calls int
}

var errWrite = errors.New("disk full")

func (h *failingHandler) Handle(context.Context, slog.Record) error { h.calls++; return errWrite }

func TestHandlerErrorIsReturned(t *testing.T) {
	t.Parallel()
	h := &failingHandler{Handler: slog.NewJSONHandler(&bytes.Buffer{}, &slog.HandlerOptions{Level: slog.LevelWarn})}
	sink := slogsink.New(slog.New(h), slogsink.Options{})
	bad := ev(polyloop.EventRunFinished, 1, func(e *polyloop.Event) { e.StopReason = polyloop.StopEnvError })
	if err := sink.Emit(context.Background(), bad); !errors.Is(err, errWrite) {
		t.Errorf("Emit = %v; want the handler's error", err)
	}
	// Below the handler's level: not written, no error.
	if err := sink.Emit(context.Background(), ev(polyloop.EventStepStarted, 1, nil)); err != nil || h.calls != 1 {
		t.Errorf("Emit below the level = %v after %d Handle calls; want nil after 1", err, h.calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sink.Emit(ctx, bad); !errors.Is(err, context.Canceled) || h.calls != 1 {
		t.Errorf("Emit with a done context = %v; want context.Canceled and no write", err)
	}
}

func TestLoggerAttrsAndConcurrency(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(&lockedWriter{w: &buf, mu: &mu}, nil)).With("service", "worker-7")
	sink := slogsink.New(logger, slogsink.Options{})
	evs := notExecutedRun()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for _, e := range evs {
				if err := sink.Emit(context.Background(), e); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	got := parseLines(t, buf.String())
	if len(got) != 8*len(evs) {
		t.Fatalf("%d lines; want %d", len(got), 8*len(evs))
	}
	for _, l := range got {
		want(t, l, map[string]any{"service": "worker-7", "run_id": "run-1"})
	}
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
