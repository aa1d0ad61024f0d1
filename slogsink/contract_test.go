package slogsink_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/polylooptest"
	"github.com/polyloop/polyloop/slogsink"
)

// brokenWriter fails every write, as a full disk or a closed pipe.
type brokenWriter struct{}

func (brokenWriter) Write([]byte) (int, error) { return 0, errWrite }

// everyKind lists the event kinds; at the default level the sink writes a
// line for each, so each Emit to a broken writer must fail.
var everyKind = []polyloop.EventKind{
	polyloop.EventRunStarted, polyloop.EventRunResumed, polyloop.EventStepStarted,
	polyloop.EventModelCallStarted, polyloop.EventModelCallFinished, polyloop.EventActionStarted,
	polyloop.EventActionFinished, polyloop.EventStepCompleted, polyloop.EventRunFinished,
	polyloop.EventConfigOverridden, polyloop.EventChildReceived,
}

func TestEventSinkContract(t *testing.T) {
	polylooptest.TestEventSink(t, harness(slog.LevelInfo, everyKind))
}

// TestEventSinkContractAtWarn: a logger at WARN writes nothing for most
// events, so only the ones it writes (a failed model call) fail.
func TestEventSinkContractAtWarn(t *testing.T) {
	polylooptest.TestEventSink(t, harness(slog.LevelWarn, nil))
}

// harness makes sinks logging at level; the failing sink's writer fails
// every write, and mustFail are the kinds it always writes.
func harness(level slog.Level, mustFail []polyloop.EventKind) polylooptest.SinkHarness {
	var mu sync.Mutex
	outputs := map[polyloop.EventSink]*lockedWriter{}
	opts := &slog.HandlerOptions{Level: level}
	return polylooptest.SinkHarness{
		New: func(testing.TB) polyloop.EventSink {
			w := &lockedWriter{w: new(bytes.Buffer), mu: new(sync.Mutex)}
			sink := slogsink.New(slog.New(slog.NewJSONHandler(w, opts)), slogsink.Options{IncludeSnapshot: true})
			mu.Lock()
			defer mu.Unlock()
			outputs[sink] = w
			return sink
		},
		NewFailing: func(testing.TB) polyloop.EventSink {
			return slogsink.New(slog.New(slog.NewJSONHandler(brokenWriter{}, opts)), slogsink.Options{})
		},
		MustFail: mustFail,
		Verify: func(t testing.TB, sink polyloop.EventSink, emitted []polyloop.Event) error {
			mu.Lock()
			w := outputs[sink]
			mu.Unlock()
			w.mu.Lock()
			out := w.w.String()
			w.mu.Unlock()
			return verifyLines(t, out, logged(emitted, level))
		},
	}
}

// logged returns the events a logger at level writes.
func logged(evs []polyloop.Event, level slog.Level) []polyloop.Event {
	var out []polyloop.Event
	for _, ev := range evs {
		if slogsink.LevelOf(ev) >= level {
			out = append(out, ev)
		}
	}
	return out
}

// verifyLines checks one JSON line per event, in order, with its kind, run
// id and seq.
func verifyLines(t testing.TB, out string, emitted []polyloop.Event) error {
	lines := parseLines(t, out)
	if len(lines) != len(emitted) {
		return fmt.Errorf("%d lines for %d events", len(lines), len(emitted))
	}
	var errs []error
	for i, ev := range emitted {
		l := lines[i]
		if l["kind"] != string(ev.Kind) || l["run_id"] != ev.RunID || l["seq"] != float64(ev.Seq) {
			errs = append(errs, fmt.Errorf("line %d = kind %v run %v seq %v; want %s %s %d",
				i, l["kind"], l["run_id"], l["seq"], ev.Kind, ev.RunID, ev.Seq))
		}
	}
	return errors.Join(errs...)
}
