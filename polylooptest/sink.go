package polylooptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// SinkHarness tells TestEventSink how to drive an EventSink. Only New is
// required; every check that needs a missing field is skipped with the
// reason logged.
type SinkHarness struct {
	// New returns a fresh sink that delivers. It is called once or more per
	// subtest, from a goroutine other than the test's.
	New func(t testing.TB) polyloop.EventSink
	// NewFailing returns a sink whose delivery fails (a writer that returns
	// errors, an exporter whose endpoint refuses). An event of every kind is
	// emitted to it: a sink may write nothing for some kinds (a level filter,
	// a progress display), but at least one Emit must return an error, and
	// none may return an error that looks like a context error. Nil: the
	// FailureReturned check is skipped.
	NewFailing func(t testing.TB) polyloop.EventSink
	// MustFail names event kinds that NewFailing's sink always writes: the
	// Emit of every event of these kinds must return an error. Empty: at
	// least one event must fail, whichever it is.
	MustFail []polyloop.EventKind
	// Verify, when set, is called after an event of every kind was emitted
	// to sink (made by New) and checks that the sink's output reflects them.
	Verify func(t testing.TB, sink polyloop.EventSink, emitted []polyloop.Event) error
	// Skip names checks the implementation cannot honour, with the reason
	// logged when each is skipped, e.g. {"Concurrent": "..."}. A sink that is
	// shared between runners must be safe for concurrent use, and even an
	// unshared sink sees concurrent calls when one outlives the runner's
	// per-event timeout. A name that is no check fails the suite.
	Skip map[string]string
	// Timeout is the watchdog of each subtest (DefaultTimeout when zero).
	Timeout time.Duration
	// CancelWithin is how soon Emit must return once its context is done
	// (DefaultCancelWithin when zero).
	CancelWithin time.Duration
}

// TestEventSink checks that the sinks made by h honour the EventSink
// contract. Run it with -race.
//
// The checks (subtest names, usable as keys of h.Skip):
//   - EveryKind: an event of each kind, with every field its kind uses,
//     is delivered with a nil error (and h.Verify accepts the output).
//   - EventNotModified: Emit leaves the event and what it points to as
//     they were.
//   - FailureReturned: with NewFailing, Emit returns the failure as an
//     error instead of swallowing it: for at least one event of the
//     samples, and for every kind named in h.MustFail.
//   - CancelledContext: Emit with a cancelled context returns promptly; if
//     it fails, with an error that errors.Is context.Canceled.
//   - Concurrent: concurrent Emit calls on one sink all succeed.
func TestEventSink(t *testing.T, h SinkHarness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("polylooptest: SinkHarness.New is required")
	}
	runSuite(t, "EventSink", h, newSettings(h.Timeout, h.CancelWithin, h.Skip), sinkChecks)
}

var sinkChecks = []check[SinkHarness]{
	{"EveryKind", checkSinkEveryKind},
	{"EventNotModified", checkSinkNotModified},
	{"FailureReturned", checkSinkFailure},
	{"CancelledContext", checkSinkCancelled},
	{"Concurrent", checkSinkConcurrent},
}

func checkSinkEveryKind(e *env, h SinkHarness) error {
	sink := h.New(e.t)
	evs := sampleEvents("polylooptest-sink")
	for _, ev := range evs {
		if err := sink.Emit(e.ctx, ev); err != nil {
			return broke(ruleSinkDelivers, "Emit of a %s event failed: %w", ev.Kind, err)
		}
	}
	if h.Verify == nil {
		return nil
	}
	if err := h.Verify(e.t, sink, evs); err != nil {
		return broke(ruleSinkDelivers, "the harness's Verify rejected the sink's output: %w", err)
	}
	return nil
}

func checkSinkNotModified(e *env, h SinkHarness) error {
	sink := h.New(e.t)
	for _, ev := range sampleEvents("polylooptest-sink") {
		before, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("sample event does not encode: %v", err)
		}
		if err := sink.Emit(e.ctx, ev); err != nil {
			return broke(ruleSinkDelivers, "Emit of a %s event failed: %w", ev.Kind, err)
		}
		if after, _ := json.Marshal(ev); string(after) != string(before) {
			return broke(ruleEventNotModified, "Emit modified a %s event:\nbefore %s\nafter  %s", ev.Kind, cut(before), cut(after))
		}
	}
	return nil
}

func checkSinkFailure(e *env, h SinkHarness) error {
	if h.NewFailing == nil {
		return skipf("the harness gives no NewFailing sink, so no delivery failure can be provoked")
	}
	sink := h.NewFailing(e.t)
	failures := 0
	for _, ev := range sampleEvents("polylooptest-sink") {
		err := sink.Emit(e.ctx, ev)
		switch {
		case err == nil && slices.Contains(h.MustFail, ev.Kind):
			return broke(ruleSinkFailureReturned, "Emit of a %s event on NewFailing's sink returned nil, but the harness's MustFail names that kind: a delivery failure must be returned, not swallowed", ev.Kind)
		case err == nil:
			continue
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			return broke(ruleSinkFailureNotCtx, "Emit of a %s event on NewFailing's sink returned %q, which matches a context error: a delivery failure must not look like a timeout", ev.Kind, err)
		}
		failures++
	}
	if failures == 0 {
		return broke(ruleSinkFailureReturned, "Emit on NewFailing's sink returned nil for an event of every kind: a delivery failure must be returned, not swallowed")
	}
	return nil
}

func checkSinkCancelled(e *env, h SinkHarness) error {
	sink := h.New(e.t)
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	ev := sampleEvents("polylooptest-sink")[0]
	err := returnsPromptly(e, func() error { return sink.Emit(ctx, ev) })
	if err == nil {
		return nil
	}
	return cancelError(err, context.Canceled, "Emit with a cancelled context")
}

func checkSinkConcurrent(e *env, h SinkHarness) error {
	sink := h.New(e.t)
	evs := sampleEvents("polylooptest-sink")
	const workers = 8
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for _, ev := range evs {
				ev.RunID = fmt.Sprintf("polylooptest-sink-%d", w)
				if err := sink.Emit(e.ctx, ev); err != nil {
					errs[w] = broke(ruleConcurrentUse, "concurrent Emit of a %s event failed: %w", ev.Kind, err)
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
