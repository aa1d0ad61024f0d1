package view_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/view"
)

// until reads events until one satisfies ok, and returns the ones read
// (it included); it fails after 10 s or when the stream ends first.
func until(t *testing.T, events <-chan event, what string, ok func(event) bool) []event {
	t.Helper()
	var seen []event
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e, open := <-events:
			if !open {
				t.Fatalf("the stream ended before %s; events: %+v", what, seen)
			}
			seen = append(seen, e)
			if ok(e) {
				return seen
			}
		case <-timeout:
			t.Fatalf("no %s within 10 s; events: %+v", what, seen)
		}
	}
}

func previewOf(t *testing.T, e event) view.Preview {
	t.Helper()
	var p view.Preview
	if err := json.Unmarshal([]byte(e.Data), &p); err != nil {
		t.Fatalf("preview %q: %v", e.Data, err)
	}
	return p
}

// readSignal is a store that signals each read of a log: a ReadRows, or
// the first chunk of a stream (ReadRowsFrom).
type readSignal struct {
	*memstore.Store
	reads chan struct{}
}

func (s *readSignal) ReadRows(ctx context.Context, runID string) ([]polyloop.Row, error) {
	log, err := s.Store.ReadRows(ctx, runID)
	s.signal()
	return log, err
}

func (s *readSignal) ReadRowsFrom(ctx context.Context, runID string, from int64, limit int) ([]polyloop.Row, error) {
	rows, err := s.Store.ReadRowsFrom(ctx, runID, from, limit)
	if from == 0 {
		s.signal()
	}
	return rows, err
}

func (s *readSignal) signal() {
	select {
	case s.reads <- struct{}{}:
	default:
	}
}

// TestLiveStreamsPreviews: a run driven in this process, its client
// streaming: the live stream of its page sends the step that holds the
// call, then the call's text as it streams — before the reply is recorded
// —, drops a superseded attempt's text and never glues two attempts, then
// sends the recorded reply as soon as it is durable and the end, without
// waiting for the poll (which is an hour here).
func TestLiveStreamsPreviews(t *testing.T) {
	t.Parallel()
	st := &readSignal{Store: memstore.New(), reads: make(chan struct{}, 100)}
	sink := view.NewPreviewSink()
	s, _ := newServer(t, view.Options{Store: st, Previews: sink, Poll: time.Hour})
	srv := httptest.NewServer(s)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The page is opened, and has read the log, before the run writes
	// anything: the step of the call reaches it only because a preview
	// of that call came.
	events := sse(t, ctx, srv.URL+"/live?id=streamed&seq=0")
	<-st.reads
	m := newPacedModel()
	errc := startPacedRun(st, m, sink, "streamed")
	m.send(t, polyloop.Delta{Attempt: 1, Text: "Hel"}, polyloop.Delta{Attempt: 1, Text: "lo"})
	seen := until(t, events, "a preview", func(e event) bool { return e.Name == "preview" })
	// The run's first record may reach the page before the preview does
	// (a loaded machine): it brings the status and no step yet.
	for len(seen) > 1 && (seen[0].Name == "status" || seen[0].Name == "steps" && seen[0].Data == "") {
		seen = seen[1:]
	}
	if seen[0].Name != "steps" || !strings.Contains(seen[0].Data, `<pre class="preview" data-call="m1.1"`) {
		t.Fatalf("the first event is not the step that holds the call: %+v", seen)
	}
	text := ""
	for p := previewOf(t, seen[len(seen)-1]); ; p = previewOf(t, until(t, events, "a preview", func(e event) bool { return e.Name == "preview" })[0]) {
		if p.CallID != "m1.1" || p.Attempt != 1 || p.Superseded {
			t.Fatalf("preview %+v, want text of m1.1 attempt 1", p)
		}
		text += p.Text
		if text == "Hello" {
			break
		}
	}
	log, _ := polyloop.ReadLog(ctx, st, "streamed")
	for _, r := range log.Records {
		if r.Kind() == polyloop.KindModelCallResult {
			t.Fatal("the reply was recorded before its text was previewed: the test shows nothing")
		}
	}

	m.send(t, polyloop.Delta{Attempt: 1, Superseded: true})
	p := previewOf(t, until(t, events, "the superseded attempt", func(e event) bool { return e.Name == "preview" })[0])
	if !p.Superseded || p.Attempt != 1 || p.CallID != "m1.1" || p.Text != "" {
		t.Fatalf("preview %+v, want attempt 1 of m1.1 superseded", p)
	}
	m.send(t, polyloop.Delta{Attempt: 2, Text: "World"})
	p = previewOf(t, until(t, events, "attempt 2's text", func(e event) bool { return e.Name == "preview" })[0])
	if p.Attempt != 2 || p.Text != "World" || !p.Whole {
		t.Fatalf("preview %+v, want attempt 2's whole text", p)
	}

	m.answer(t, "World")
	seen = until(t, events, "the end", func(e event) bool { return e.Name == "end" })
	var steps string
	for _, e := range seen {
		if e.Name == "preview" {
			t.Errorf("a preview after the reply: %+v", e)
		}
		if e.Name == "steps" {
			steps += e.Data
		}
	}
	if !strings.Contains(steps, `<span class="label">reply</span><pre class="text">World</pre>`) || strings.Contains(steps, `class="preview"`) {
		t.Errorf("the steps after the reply:\n%s", steps)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}
