package otelsink_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/diag"
	"github.com/polyloop/polyloop/otelsink"
)

// script builds the events a Runner emits for a run, record by record: each
// method reflects one record and advances seq and the clock.
type script struct {
	runID string
	seq   int64
	at    time.Time
	evs   []polyloop.Event
}

func newScript(runID string) *script {
	return &script{runID: runID, at: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (s *script) add(kinds []polyloop.EventKind, f func(*polyloop.Event)) *script {
	s.at = s.at.Add(time.Second)
	for _, k := range kinds {
		ev := polyloop.Event{V: polyloop.EventVersion, Kind: k, RunID: s.runID, Agent: "researcher", Seq: s.seq, At: s.at}
		f(&ev)
		s.evs = append(s.evs, ev)
	}
	s.seq++
	return s
}

func one(k polyloop.EventKind) []polyloop.EventKind { return []polyloop.EventKind{k} }

func testSnapshot() *polyloop.Snapshot {
	return &polyloop.Snapshot{Agent: "researcher", Task: polyloop.Task{Input: "find it"},
		Tools: []polyloop.ToolSpec{{Name: "search", Description: "Search the web."}, {Name: "bash", Description: "Run a command."}},
		Model: polyloop.ModelParams{Provider: "openai", Model: "gpt-test", Temperature: new(0.25),
			Seed: new(int64(7)), MaxOutputTokens: 256},
		ModelClient: polyloop.Component{Name: "openaimodel", Config: json.RawMessage(`{"base_url":"https://llm.example:8443/v1/","max_retries":2}`)}}
}

func (s *script) started() *script {
	return s.add(one(polyloop.EventRunStarted), func(e *polyloop.Event) {
		e.Snapshot, e.SnapshotHash = testSnapshot(), "sha256:abc"
	})
}

func (s *script) overridden(snap polyloop.Snapshot) *script {
	return s.add(one(polyloop.EventConfigOverridden), func(e *polyloop.Event) {
		e.Override = &polyloop.ConfigOverride{PreviousHash: "sha256:abc", SnapshotHash: "sha256:def",
			Fields: []string{"model", "tools"}, Snapshot: snap}
	})
}

func (s *script) resumed(plan polyloop.ResumePlan) *script {
	s.seq = plan.LastSeq + 1
	s.at = s.at.Add(time.Minute)
	s.evs = append(s.evs, polyloop.Event{V: polyloop.EventVersion, Kind: polyloop.EventRunResumed,
		RunID: s.runID, Agent: "researcher", Seq: plan.LastSeq, At: s.at, Plan: &plan,
		Snapshot: testSnapshot(), SnapshotHash: "sha256:abc"})
	return s
}

func callID(step, attempt int) string {
	return "m" + string(rune('0'+step)) + "." + string(rune('0'+attempt))
}

func (s *script) modelCall(step, attempt int) *script {
	kinds := []polyloop.EventKind{polyloop.EventStepStarted, polyloop.EventModelCallStarted}
	if attempt > 1 {
		kinds = kinds[1:]
	}
	return s.add(kinds, func(e *polyloop.Event) {
		e.Step, e.CallID, e.Attempt = step, callID(step, attempt), attempt
	})
}

func (s *script) reply(step, attempt int, r polyloop.ModelReply) *script {
	return s.add(one(polyloop.EventModelCallFinished), func(e *polyloop.Event) {
		e.Step, e.CallID, e.Reply = step, callID(step, attempt), &r
	})
}

func (s *script) modelFailed(step, attempt int, d *diag.Diagnostic) *script {
	return s.add(one(polyloop.EventModelCallFinished), func(e *polyloop.Event) {
		e.Step, e.CallID, e.Failure = step, callID(step, attempt), d
	})
}

func actionID(step int) string { return "a" + string(rune('0'+step)) }

func (s *script) action(step, attempt int, a polyloop.Action) *script {
	return s.add(one(polyloop.EventActionStarted), func(e *polyloop.Event) {
		e.Step, e.CallID, e.Attempt, e.ActionID = step, callID(step, 1), attempt, actionID(step)
		e.Action, e.Replay = &a, polyloop.ReplaySafe
	})
}

// outcome reflects the StepCompleted of an action step: action_finished and
// step_completed, as the Runner emits them.
func (s *script) outcome(step int, o polyloop.ActionOutcome, synth string) *script {
	rec := &polyloop.StepCompleted{Step: step, ModelCallID: callID(step, 1), Decision: polyloop.DecisionAct, SettledAction: polyloop.SettledAction{ResultID: actionID(step), Outcome: &polyloop.StepOutcome{Status: o.Status, Done: o.Done}, Observation: o.Observation}}
	if o.Status != polyloop.Executed {
		rec.Observation, rec.Synthetic = synth, true
	}
	kinds := []polyloop.EventKind{polyloop.EventActionFinished, polyloop.EventStepCompleted}
	return s.add(kinds, func(e *polyloop.Event) {
		e.Step, e.CallID, e.StepRecord = step, callID(step, 1), rec
		if e.Kind == polyloop.EventActionFinished {
			e.ActionID, e.Outcome = actionID(step), &o
		}
	})
}

func (s *script) final(step int, answer string) *script {
	return s.add(one(polyloop.EventStepCompleted), func(e *polyloop.Event) {
		e.Step, e.CallID = step, callID(step, 1)
		e.StepRecord = &polyloop.StepCompleted{Step: step, ModelCallID: callID(step, 1),
			Decision: polyloop.DecisionFinal, Answer: answer}
	})
}

func (s *script) finished(r polyloop.StopReason, answer string) *script {
	return s.add(one(polyloop.EventRunFinished), func(e *polyloop.Event) {
		e.StopReason, e.FinalAnswer = r, answer
		e.Totals = &polyloop.Totals{Steps: 2, ModelCalls: 2, Actions: 1, InputTokens: 30, OutputTokens: 12}
	})
}

// emitAll feeds the events to the sink, failing the test on any error.
func emitAll(t *testing.T, ctx context.Context, s polyloop.EventSink, evs []polyloop.Event) {
	t.Helper()
	for _, ev := range evs {
		if err := s.Emit(ctx, ev); err != nil {
			t.Fatalf("Emit(%s seq %d): %v", ev.Kind, ev.Seq, err)
		}
	}
}

// recorder returns a sink recording into an in-memory span recorder.
func recorder(opts otelsink.Options) (*otelsink.Sink, *tracetest.SpanRecorder) {
	sr := tracetest.NewSpanRecorder()
	opts.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	return otelsink.New(opts), sr
}

func attrsOf(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// byName indexes ended spans by name; several spans of one name keep their
// order.
func byName(spans []sdktrace.ReadOnlySpan) map[string][]sdktrace.ReadOnlySpan {
	m := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		m[s.Name()] = append(m[s.Name()], s)
	}
	return m
}

func toolCall(tool, id, args string) polyloop.Action {
	return polyloop.Action{CallID: id, Tool: tool, Args: json.RawMessage(args)}
}
