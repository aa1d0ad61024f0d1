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

func TestEventSinkContract(t *testing.T) {
	var mu sync.Mutex
	outputs := map[polyloop.EventSink]*lockedWriter{}
	polylooptest.TestEventSink(t, polylooptest.SinkHarness{
		New: func(testing.TB) polyloop.EventSink {
			w := &lockedWriter{w: new(bytes.Buffer), mu: new(sync.Mutex)}
			sink := slogsink.New(slog.New(slog.NewJSONHandler(w, nil)), slogsink.Options{IncludeSnapshot: true})
			mu.Lock()
			defer mu.Unlock()
			outputs[sink] = w
			return sink
		},
		NewFailing: func(testing.TB) polyloop.EventSink {
			return slogsink.New(slog.New(slog.NewJSONHandler(brokenWriter{}, nil)), slogsink.Options{})
		},
		Verify: func(t testing.TB, sink polyloop.EventSink, emitted []polyloop.Event) error {
			mu.Lock()
			w := outputs[sink]
			mu.Unlock()
			w.mu.Lock()
			out := w.w.String()
			w.mu.Unlock()
			return verifyLines(t, out, emitted)
		},
	})
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
