package otelsink

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/polyloop/polyloop"
)

// InstrumentationName is the name of the sink's tracer.
const InstrumentationName = "github.com/polyloop/polyloop/otelsink"

// ErrNoRunID is returned by Emit for an event without a run id.
var ErrNoRunID = errors.New("otelsink: event has no run id")

// Options configure a Sink. The zero value is usable.
type Options struct {
	// TracerProvider makes the sink's tracer; nil: otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// IncludeContent records tool-call arguments (gen_ai.tool.call.arguments)
	// and the executor's observation (gen_ai.tool.call.result). Off by
	// default: content may be large or sensitive.
	IncludeContent bool
	// Now stamps the end of spans ended by EndRun and Close; nil: time.Now.
	Now func() time.Time
	// RunRoot exports a root span for each run, with the ids of the run's
	// anchor, so that the trace is well-formed: the invocations' parent is
	// a span the backend has (see Resumed runs). The root starts and ends
	// at run_started, and the sink flushes the TracerProvider then (when it
	// has ForceFlush, as the SDK's has), so that a first invocation killed
	// before its end still leaves the root with the backend. It needs a
	// TracerProvider whose ids come from IDGenerator (NewFromEnv's does, and
	// sets RunRoot); with another generator the root span gets other ids,
	// and it has status Error saying so.
	RunRoot bool
}

// Sink is a polyloop.EventSink that records traces. Create it with New.
type Sink struct {
	tracer   trace.Tracer
	provider trace.TracerProvider
	opts     Options

	mu   sync.Mutex
	runs map[string]*invocation
	// prev holds the invoke_agent span of runs whose last invocation ended
	// without run_finished, for the link of their next run_resumed.
	prev map[string]trace.SpanContext
}

// invocation is the open state of one run's current invocation.
type invocation struct {
	// span is the invoke_agent span; nil when the sink saw no run_started or
	// run_resumed for the run (it was added mid-invocation).
	span trace.Span
	// ctx carries span, as the parent of chat and execute_tool spans.
	ctx context.Context
	// outer is the span found in the context of the event that started
	// the invocation (the caller's span), invalid when there was none.
	outer trace.SpanContext
	facts runFacts
	chat  openSpan
	tool  openSpan
	usage usage
}

// usage sums the token usage the invocation's model calls reported.
type usage struct {
	input, output int64
	reported      bool
}

// openSpan is a chat or execute_tool span waiting for its closing event.
type openSpan struct {
	span trace.Span
	id   string
}

var _ polyloop.EventSink = (*Sink)(nil)

// New returns a Sink.
func New(opts Options) *Sink {
	tp := opts.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Sink{
		provider: tp,
		tracer: tp.Tracer(InstrumentationName,
			trace.WithInstrumentationVersion(polyloop.LibraryVersion),
			trace.WithSchemaURL(semconv.SchemaURL)),
		opts: opts,
		runs: map[string]*invocation{},
		prev: map[string]trace.SpanContext{},
	}
}

// Emit implements polyloop.EventSink. It returns ctx's error when ctx is
// already done, and ErrNoRunID for an event without a run id; otherwise it
// records the event and returns nil. Kinds it does not know are ignored.
func (s *Sink) Emit(ctx context.Context, ev polyloop.Event) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ev.RunID == "" {
		return ErrNoRunID
	}
	if ev.At.IsZero() {
		ev.At = s.opts.Now()
	}
	if s.record(ctx, ev) {
		s.flush(ctx)
	}
	return nil
}

// record records the event; it reports whether the provider should be
// flushed now (the run's root span has just ended).
func (s *Sink) record(ctx context.Context, ev polyloop.Event) (flush bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch ev.Kind {
	case polyloop.EventRunStarted, polyloop.EventRunResumed:
		return s.startInvocation(ctx, ev)
	case polyloop.EventModelCallStarted:
		s.startChat(ctx, ev)
	case polyloop.EventModelCallFinished:
		s.endChat(ctx, ev)
	case polyloop.EventActionStarted:
		s.startTool(ctx, ev)
	case polyloop.EventActionFinished:
		s.endTool(ctx, ev)
	case polyloop.EventRunFinished:
		s.finishInvocation(ev)
	case polyloop.EventStepCompleted, polyloop.EventStepCopied, polyloop.EventConfigOverridden, polyloop.EventChildReceived:
		s.addSpanEvent(ctx, ev)
	case polyloop.EventCandidateSuperseded:
		s.superseded(ctx, ev)
	}
	return false
}

// flush asks the TracerProvider, when it can (the SDK's can), to export
// what has ended, within ctx. A failure to export is the exporter's to
// report (through otel.Handle), as for every other span.
func (s *Sink) flush(ctx context.Context) {
	if f, ok := s.provider.(interface{ ForceFlush(context.Context) error }); ok {
		if err := f.ForceFlush(ctx); err != nil {
			otel.Handle(err)
		}
	}
}

// EndRun ends the open spans of runID's current invocation with status
// Error: call it when Run or Resume returns an error, since no run_finished
// event will come. err may be nil. Run and Resume return the run's id in
// RunResult.RunID together with the error (also an id Run generated), so
// the caller passes that: res, err := r.Run(...); if err != nil {
// sink.EndRun(res.RunID, err) }. The id is empty only when the run never
// began (an invalid configuration, a store failure before run_started), and
// then no invocation is open. EndRun does nothing when no invocation of the
// run is open. Until EndRun or Close, the sink keeps the open invocation's
// state.
func (s *Sink) EndRun(runID string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.abort(runID, failureOf(err), s.opts.Now())
}

// Close ends every open span with status Error, as EndRun does, so that
// nothing is lost when the TracerProvider shuts down. The Sink stays usable.
// It always returns nil.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	for id := range s.runs {
		s.abort(id, failClosed, now)
	}
	return nil
}

// run returns the invocation of runID, creating a span-less one for a run
// the sink has not seen start.
func (s *Sink) run(ctx context.Context, runID string) *invocation {
	inv := s.runs[runID]
	if inv == nil {
		inv = &invocation{ctx: parentContext(ctx, runID)}
		s.runs[runID] = inv
	}
	return inv
}

// parentOf is the parent of an invoke_agent span of runID. A child run (see
// polyloop.InvokeChild) is started from inside its parent's action: its
// parent is that action's execute_tool span when this sink has it open and
// ctx holds no span other than the one the parent invocation started under.
// Otherwise it is the span in ctx, or the run's anchor when ctx has none.
func (s *Sink) parentOf(ctx context.Context, runID string) context.Context {
	if a, ok := polyloop.ActionFromContext(ctx); ok {
		p := s.runs[a.RunID]
		sc := trace.SpanContextFromContext(ctx)
		if p != nil && p.tool.span != nil && p.tool.id == a.ActionID && (!sc.IsValid() || sc.Equal(p.outer)) {
			return trace.ContextWithSpan(context.Background(), p.tool.span)
		}
	}
	return parentContext(ctx, runID)
}

// parentContext keeps only the span of ctx, or puts runID's anchor (see
// RunAnchor) in its place when ctx has none: the sink outlives the event's
// context, whose deadline is the runner's per-event timeout.
func parentContext(ctx context.Context, runID string) context.Context {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		sc = RunAnchor(runID)
	}
	return trace.ContextWithSpanContext(context.Background(), sc)
}
