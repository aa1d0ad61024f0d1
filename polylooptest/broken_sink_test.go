package polylooptest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/polyloop/polyloop"
)

// sinkFunc adapts a function to EventSink.
type sinkFunc func(ctx context.Context, ev polyloop.Event) error

func (f sinkFunc) Emit(ctx context.Context, ev polyloop.Event) error { return f(ctx, ev) }

func sinkWith(f func(h *SinkHarness)) SinkHarness {
	h := goodSinkHarness()
	h.Verify = nil
	f(&h)
	return h
}

func newSink(f sinkFunc) func(testing.TB) polyloop.EventSink {
	return func(testing.TB) polyloop.EventSink { return f }
}

func brokenSinkCases() []brokenCase {
	c := func(check string, r rule, h SinkHarness) brokenCase {
		return brokenCase{"EventSink", check, r, func(t *testing.T) outcome { return runNamed(t, sinkChecks, check, h, h.settings()) }}
	}
	var mu sync.Mutex
	return []brokenCase{
		c("EveryKind", ruleSinkDelivers, sinkWith(func(h *SinkHarness) {
			h.New = newSink(func(_ context.Context, ev polyloop.Event) error {
				if ev.Kind == polyloop.EventChildReceived {
					return errors.New("unknown event kind")
				}
				return nil
			})
		})),
		c("EveryKind", ruleSinkDelivers, sinkWith(func(h *SinkHarness) {
			h.Verify = func(testing.TB, polyloop.EventSink, []polyloop.Event) error { return errors.New("no spans exported") }
		})),
		c("EventNotModified", ruleEventNotModified, sinkWith(func(h *SinkHarness) {
			h.New = newSink(func(_ context.Context, ev polyloop.Event) error {
				if ev.Reply != nil {
					ev.Reply.Text = "[redacted]" // redacts in place, through the pointer
				}
				return nil
			})
		})),
		c("FailureReturned", ruleSinkFailureReturned, sinkWith(func(h *SinkHarness) {
			h.NewFailing = newSink(func(context.Context, polyloop.Event) error { return nil })
		})),
		c("FailureReturned", ruleSinkFailureReturned, sinkWith(func(h *SinkHarness) {
			h.MustFail = []polyloop.EventKind{polyloop.EventRunFinished}
			h.NewFailing = newSink(onlyKindFails(polyloop.EventStepStarted))
		})),
		c("FailureReturned", ruleSinkFailureNotCtx, sinkWith(func(h *SinkHarness) {
			h.NewFailing = newSink(func(context.Context, polyloop.Event) error {
				return fmt.Errorf("export: %w", context.DeadlineExceeded)
			})
		})),
		c("CancelledContext", ruleCancelError, sinkWith(func(h *SinkHarness) {
			h.New = newSink(func(ctx context.Context, _ polyloop.Event) error {
				if ctx.Err() != nil {
					return errors.New("exporter shut down")
				}
				return nil
			})
		})),
		c("Concurrent", ruleConcurrentUse, sinkWith(func(h *SinkHarness) {
			h.New = newSink(func(context.Context, polyloop.Event) error {
				if !mu.TryLock() {
					return errors.New("busy")
				}
				defer mu.Unlock()
				spin()
				return nil
			})
		})),
	}
}

// onlyKindFails is a failing sink that writes (and so fails) only events of
// one kind, like a logger at WARN level.
func onlyKindFails(kind polyloop.EventKind) sinkFunc {
	return func(_ context.Context, ev polyloop.Event) error {
		if ev.Kind == kind {
			return errors.New("disk full")
		}
		return nil
	}
}

// TestFailureReturnedAcceptsSelectiveSinks: a sink that writes nothing for
// most kinds passes when the kinds it writes return the failure.
func TestFailureReturnedAcceptsSelectiveSinks(t *testing.T) {
	for _, mustFail := range [][]polyloop.EventKind{nil, {polyloop.EventRunFinished}} {
		h := sinkWith(func(h *SinkHarness) {
			h.MustFail = mustFail
			h.NewFailing = newSink(onlyKindFails(polyloop.EventRunFinished))
		})
		if o := runNamed(t, sinkChecks, "FailureReturned", h, h.settings()); o.err != nil || o.skip != "" {
			t.Errorf("MustFail %v: FailureReturned did not pass a sink that fails only on run_finished: %+v", mustFail, o)
		}
	}
}
