package otelsink_test

import (
	"context"
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/otelsink"
)

// rootedRecorder is recorder with the sink's IDGenerator and RunRoot.
func rootedRecorder() (*otelsink.Sink, *tracetest.SpanRecorder) {
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr), sdktrace.WithIDGenerator(otelsink.IDGenerator(nil)))
	return otelsink.New(otelsink.Options{TracerProvider: tp, RunRoot: true}), sr
}

// TestRunRoot: with RunRoot and IDGenerator, a run's first invocation
// exports the run's root span with the anchor's ids, so every invocation's
// parent (the anchor) is a span of the trace; a resume, here or in another
// process, is a child of it, with no link repeating its parent.
func TestRunRoot(t *testing.T) {
	t.Parallel()
	sink, sr := rootedRecorder()
	sc := newScript("run-root").started().modelCall(1, 1).reply(1, 1, polyloop.ModelReply{}).
		action(1, 1, toolCall("fetch", "c1", `{}`))
	emitAll(t, context.Background(), sink, sc.evs)
	sink.EndRun("run-root", fmt.Errorf("run: %w", context.Canceled))

	anchor := otelsink.RunAnchor("run-root")
	spans := byName(sr.Ended())
	root := spans["run researcher"]
	if len(root) != 1 {
		t.Fatalf("spans %v; want one root span named run researcher", names(sr.Ended()))
	}
	if root[0].SpanContext().TraceID() != anchor.TraceID() || root[0].SpanContext().SpanID() != anchor.SpanID() || root[0].Parent().IsValid() {
		t.Errorf("root span %v with parent %v; want the anchor's ids and no parent", root[0].SpanContext(), root[0].Parent())
	}
	wantAttrs(t, root[0], map[string]any{"gen_ai.conversation.id": "run-root", "polyloop.span": "run"})
	first := spans["invoke_agent researcher"][0]
	if first.Parent().SpanID() != anchor.SpanID() {
		t.Errorf("first invocation's parent %v; want the root", first.Parent())
	}
	wantLinks(t, first, map[string]trace.SpanContext{})

	sc.evs = nil
	sc.resumed(polyloop.ResumePlan{Action: polyloop.PlanReplayAction, Step: 1, Attempt: 2}).
		action(1, 2, toolCall("fetch", "c1", `{}`)).
		outcome(1, polyloop.ActionOutcome{Status: polyloop.Executed, Done: true}, "").
		finished(polyloop.StopCompleted, "")
	other, sr2 := rootedRecorder() // another process
	emitAll(t, context.Background(), other, sc.evs)
	if n := len(byName(sr2.Ended())["run researcher"]); n != 0 {
		t.Errorf("a resume exported %d more root spans; the run has one", n)
	}
	resumed := byName(sr2.Ended())["invoke_agent researcher"][0]
	if resumed.Parent().SpanID() != anchor.SpanID() || resumed.SpanContext().TraceID() != anchor.TraceID() {
		t.Errorf("resumed invocation's parent %v; want the root", resumed.Parent())
	}
	wantLinks(t, resumed, map[string]trace.SpanContext{})
	if len(sr.Started()) != len(sr.Ended()) || len(sr2.Started()) != len(sr2.Ended()) {
		t.Error("spans left open")
	}
}

// TestRunRootNeedsIDGenerator: RunRoot with a provider whose ids are its
// own ends the root span at once, in error, saying why; nothing stays open.
func TestRunRootNeedsIDGenerator(t *testing.T) {
	t.Parallel()
	sink, sr := recorder(otelsink.Options{RunRoot: true})
	emitAll(t, context.Background(), sink, completedRun("run-x").evs)
	root := byName(sr.Ended())["run researcher"]
	if len(root) != 1 || root[0].Status().Code != codes.Error {
		t.Fatalf("spans %v; want a root span in error", names(sr.Ended()))
	}
	wantAttrs(t, root[0], map[string]any{"error.type": otelsink.ErrorTypeNoAnchorIDs})
	inv := byName(sr.Ended())["invoke_agent researcher"][0]
	if !inv.Parent().Equal(otelsink.RunAnchor("run-x")) {
		t.Errorf("invocation parent %v; want the anchor", inv.Parent())
	}
	if len(sr.Started()) != len(sr.Ended()) {
		t.Error("spans left open")
	}
}

// TestInvocationUsage: an invoke_agent span reports its own model calls'
// usage in gen_ai.usage.*, so that summing the spans of a resumed run does
// not count a token twice; the run's totals stay in polyloop.totals.*.
func TestInvocationUsage(t *testing.T) {
	t.Parallel()
	sink, sr := recorder(otelsink.Options{})
	sc := newScript("run-u").started().modelCall(1, 1).
		reply(1, 1, polyloop.ModelReply{Usage: polyloop.Usage{InputTokens: 100, OutputTokens: 10}}).
		action(1, 1, toolCall("fetch", "c1", `{}`))
	emitAll(t, context.Background(), sink, sc.evs)
	sink.EndRun("run-u", context.Canceled)
	sc.evs = nil
	sc.resumed(polyloop.ResumePlan{Action: polyloop.PlanReplayAction, Step: 1, Attempt: 2}).
		action(1, 2, toolCall("fetch", "c1", `{}`)).
		outcome(1, polyloop.ActionOutcome{Status: polyloop.Executed}, "").
		modelCall(2, 1).reply(2, 1, polyloop.ModelReply{Usage: polyloop.Usage{InputTokens: 200, OutputTokens: 20}}).
		final(2, "ok").finished(polyloop.StopCompleted, "ok")
	sc.evs[len(sc.evs)-1].Totals = &polyloop.Totals{Steps: 2, InputTokens: 300, OutputTokens: 30}
	emitAll(t, context.Background(), sink, sc.evs)

	invs := byName(sr.Ended())["invoke_agent researcher"]
	if len(invs) != 2 {
		t.Fatalf("spans %v", names(sr.Ended()))
	}
	wantAttrs(t, invs[0], map[string]any{"gen_ai.usage.input_tokens": int64(100), "gen_ai.usage.output_tokens": int64(10)})
	wantAttrs(t, invs[1], map[string]any{"gen_ai.usage.input_tokens": int64(200), "gen_ai.usage.output_tokens": int64(20),
		"polyloop.totals.input_tokens": int64(300)})
}

// flushCounter is a span processor that records ended spans and counts
// ForceFlush calls, noting how many spans had ended at each.
type flushCounter struct {
	*tracetest.SpanRecorder
	endedAtFlush []int
}

func (f *flushCounter) ForceFlush(ctx context.Context) error {
	f.endedAtFlush = append(f.endedAtFlush, len(f.Ended()))
	return f.SpanRecorder.ForceFlush(ctx)
}

// TestRunRootIsExportedAtRunStarted: the root span ends at run_started and
// the provider is flushed then, so that a first invocation killed before
// its end (kill -9: no code runs after) leaves its run's root with the
// backend, and the resumed invocations have their parent.
func TestRunRootIsExportedAtRunStarted(t *testing.T) {
	t.Parallel()
	fc := &flushCounter{SpanRecorder: tracetest.NewSpanRecorder()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(fc), sdktrace.WithIDGenerator(otelsink.IDGenerator(nil)))
	sink := otelsink.New(otelsink.Options{TracerProvider: tp, RunRoot: true})
	sc := newScript("run-root").started()
	emitAll(t, context.Background(), sink, sc.evs)
	root := byName(fc.Ended())["run researcher"]
	if len(root) != 1 {
		t.Fatalf("after run_started, ended spans %v; want the run's root", names(fc.Ended()))
	}
	if len(fc.endedAtFlush) != 1 || fc.endedAtFlush[0] != 1 {
		t.Errorf("flushes at run_started, with the ended spans counted at each: %v; want one, after the root ended", fc.endedAtFlush)
	}
	if !root[0].StartTime().Equal(sc.at) || !root[0].EndTime().After(sc.at) {
		t.Errorf("root from %v to %v; want it to start at run_started (%v) and last", root[0].StartTime(), root[0].EndTime(), sc.at)
	}
	sc.evs = nil
	sc.modelCall(1, 1).reply(1, 1, polyloop.ModelReply{Text: "done"}).finished(polyloop.StopCompleted, "done")
	emitAll(t, context.Background(), sink, sc.evs)
	if len(fc.endedAtFlush) != 1 {
		t.Errorf("%d flushes: only run_started flushes", len(fc.endedAtFlush))
	}
	if first := byName(fc.Ended())["invoke_agent researcher"]; len(first) != 1 || first[0].Parent().SpanID() != otelsink.RunAnchor("run-root").SpanID() {
		t.Errorf("the invocation: %v, want one, a child of the root", first)
	}
}
