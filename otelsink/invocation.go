package otelsink

import (
	"context"
	"crypto/sha256"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/diag"
)

// The values of the polyloop.link.type link attribute.
const (
	LinkRun                = "run"
	LinkPreviousInvocation = "previous_invocation"
)

// ErrorTypeUnfinished is the error.type of a span ended without its closing
// event (by EndRun, Close, or a new invocation of the same run).
const ErrorTypeUnfinished = "polyloop.unfinished"

// ErrorTypeNoAnchorIDs is the error.type of a run's root span that could not
// take the anchor's ids (Options.RunRoot without IDGenerator).
const ErrorTypeNoAnchorIDs = "polyloop.no_anchor_ids"

// failure is how a span ends in error: its error.type and status text.
type failure struct{ errType, desc string }

var (
	failClosed     = failure{ErrorTypeUnfinished, "sink closed before run_finished"}
	failSuperseded = failure{ErrorTypeUnfinished, "a new invocation of the run started before run_finished"}
	failOpenChild  = failure{ErrorTypeUnfinished, "the span's closing event never came"}
)

func (f failure) apply(span trace.Span) {
	span.SetAttributes(semconv.ErrorTypeKey.String(f.errType))
	span.SetStatus(codes.Error, f.desc)
}

// failureOf describes the error that ended an invocation, as EndRun got it.
func failureOf(err error) failure {
	switch {
	case err == nil:
		return failure{ErrorTypeUnfinished, "invocation ended without run_finished"}
	case errors.Is(err, context.Canceled):
		return failure{"canceled", "invocation canceled"}
	case errors.Is(err, context.DeadlineExceeded):
		return failure{"deadline_exceeded", "invocation deadline exceeded"}
	}
	d := diag.FromWith(err, diag.Options{Budget: 512})
	var perr *polyloop.PersistenceError
	if errors.As(err, &perr) {
		return failure{ErrorTypePersistence, d.Message}
	}
	return failure{ErrorTypeOther, d.Type + ": " + d.Message}
}

// RunAnchor is the run's anchor: a remote span context whose trace and span
// ids are derived from the run id alone (SHA-256 of "polyloop-run/" and the
// id), so that every invocation of a run, in any process, finds the same
// ids. An invoke_agent span whose caller passed no span in the context is a
// child of the anchor, so all such invocations of a run share one trace id;
// every invoke_agent span also links to the anchor (link attribute
// polyloop.link.type = "run"), which joins invocations that run under a
// caller's trace. No span with the anchor's ids is ever exported: backends
// show the invocations as roots of the run's trace whose parent is missing.
//
// The anchor is marked sampled, so the default ParentBased sampler records
// its children. A sampler that drops some runs should decide on the trace id
// (TraceIDRatioBased as the remote-parent-sampled sampler of ParentBased):
// every invocation of a run has the same one, so a run is kept or dropped
// whole.
func RunAnchor(runID string) trace.SpanContext {
	sum := sha256.Sum256([]byte("polyloop-run/" + runID))
	var tid trace.TraceID
	var sid trace.SpanID
	copy(tid[:], sum[:16])
	copy(sid[:], sum[16:24])
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid,
		TraceFlags: trace.FlagsSampled, Remote: true})
}

func link(sc trace.SpanContext, runID, kind string) trace.Link {
	return trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{
		attrRunID.String(runID), attrLinkType.String(kind),
	}}
}

// startInvocation opens the invoke_agent span of run_started or run_resumed.
// It reports whether it ended the run's root span, which the caller then
// flushes.
func (s *Sink) startInvocation(ctx context.Context, ev polyloop.Event) (rooted bool) {
	if s.runs[ev.RunID] != nil {
		s.abort(ev.RunID, failSuperseded, ev.At)
	}
	inv := &invocation{outer: trace.SpanContextFromContext(ctx)}
	if ev.Snapshot != nil {
		inv.facts = factsOf(ev.Snapshot)
	}
	parent := s.parentOf(ctx, ev.RunID)
	anchor := RunAnchor(ev.RunID)
	var links []trace.Link
	if !trace.SpanContextFromContext(parent).Equal(anchor) {
		links = append(links, link(anchor, ev.RunID, LinkRun)) // the run, seen from a caller's trace
	} else if ev.Kind == polyloop.EventRunStarted && s.opts.RunRoot {
		s.exportRoot(ev, inv.facts.model)
		rooted = true
	}
	if prev, ok := s.prev[ev.RunID]; ok && ev.Kind == polyloop.EventRunResumed {
		links = append(links, link(prev, ev.RunID, LinkPreviousInvocation))
	}
	delete(s.prev, ev.RunID)
	inv.ctx, inv.span = s.tracer.Start(parent, spanName("invoke_agent", ev.Agent),
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(ev.At),
		trace.WithLinks(links...),
		trace.WithAttributes(invokeAttrs(ev, inv.facts.model)...))
	s.runs[ev.RunID] = inv
	if ev.Plan != nil && ev.Plan.Action == polyloop.PlanAlreadyFinished {
		// A finished run: the resume runs nothing and no run_finished follows.
		inv.span.End(trace.WithTimestamp(ev.At))
		delete(s.runs, ev.RunID)
	}
	return rooted
}

// exportRoot ends the run's root span, with the anchor's ids, so that the
// anchor every invocation of the run is a child of is a span backends have.
// It starts at run_started and ends at once (at least a microsecond later:
// backends take a span of no duration for a broken one), so that it can be
// flushed before anything else happens, and a first invocation killed
// before its end (whose own spans are lost) still leaves the root with the
// backend.
// It needs the provider's span ids from IDGenerator; with another
// generator the span gets other ids: it ends in error, and the invocations
// keep the anchor as their missing parent.
func (s *Sink) exportRoot(ev polyloop.Event, m modelParams) {
	anchor := RunAnchor(ev.RunID)
	_, root := s.tracer.Start(withAnchorIDs(context.Background(), anchor), spanName("run", ev.Agent),
		trace.WithNewRoot(),
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(ev.At),
		trace.WithAttributes(rootAttrs(ev, m)...))
	sc := root.SpanContext()
	if sc.TraceID() != anchor.TraceID() || sc.SpanID() != anchor.SpanID() {
		failure{ErrorTypeNoAnchorIDs, "Options.RunRoot is set but the TracerProvider's ids do not come from otelsink.IDGenerator"}.apply(root)
	}
	end := s.opts.Now()
	if floor := ev.At.Add(time.Microsecond); end.Before(floor) {
		end = floor
	}
	root.End(trace.WithTimestamp(end))
}

// finishInvocation closes the invoke_agent span at run_finished.
func (s *Sink) finishInvocation(ev polyloop.Event) {
	inv := s.runs[ev.RunID]
	if inv == nil {
		return
	}
	delete(s.runs, ev.RunID)
	delete(s.prev, ev.RunID)
	inv.endChildren(failOpenChild, ev.At)
	if inv.span == nil {
		return
	}
	inv.span.SetAttributes(finishAttrs(ev)...)
	inv.span.SetAttributes(inv.usage.attrs()...)
	if failedStop(ev.StopReason) {
		failure{string(ev.StopReason), "run finished with stop reason " + string(ev.StopReason)}.apply(inv.span)
	}
	inv.span.End(trace.WithTimestamp(ev.At))
}

// failedStop reports whether a stop reason is a failure of the run.
func failedStop(r polyloop.StopReason) bool {
	switch r {
	case polyloop.StopLLMError, polyloop.StopEnvError, polyloop.StopResumeStateUnknown:
		return true
	}
	return false
}

// abort ends the open spans of runID's invocation with f (its children
// too: they end for the same cause), remembering the invoke_agent span for
// the link of the next run_resumed.
func (s *Sink) abort(runID string, f failure, at time.Time) {
	inv := s.runs[runID]
	if inv == nil {
		return
	}
	delete(s.runs, runID)
	inv.endChildren(f, at)
	if inv.span == nil {
		return
	}
	inv.span.SetAttributes(inv.usage.attrs()...)
	f.apply(inv.span)
	inv.span.End(trace.WithTimestamp(at))
	s.prev[runID] = inv.span.SpanContext()
}

// endChildren ends the chat and execute_tool spans still open.
func (inv *invocation) endChildren(f failure, at time.Time) {
	for _, o := range []*openSpan{&inv.chat, &inv.tool} {
		if o.span != nil {
			f.apply(o.span)
			o.span.End(trace.WithTimestamp(at))
			*o = openSpan{}
		}
	}
}

// addSpanEvent records step_completed, config_overridden and child_received
// as span events of the invoke_agent span.
func (s *Sink) addSpanEvent(ctx context.Context, ev polyloop.Event) {
	inv := s.run(ctx, ev.RunID)
	if ev.Kind == polyloop.EventConfigOverridden && ev.Override != nil {
		inv.facts = factsOf(&ev.Override.Snapshot)
	}
	if inv.span == nil {
		return
	}
	inv.span.AddEvent("polyloop."+string(ev.Kind), trace.WithTimestamp(ev.At),
		trace.WithAttributes(spanEventAttrs(ev)...))
}

func spanName(op, subject string) string {
	if subject == "" {
		return op
	}
	return op + " " + subject
}
