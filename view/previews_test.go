package view_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/view"
)

// page applies previews as the live page's script does (live.js): per
// call, the text of one attempt; a whole text or a text of another
// attempt replaces it, a superseded attempt (0: every attempt) is dropped.
type page struct {
	mu      sync.Mutex
	text    map[string]string
	attempt map[string]int
	got     []view.Preview
}

// watch applies the previews of run to a new page until ctx is done.
func watch(t *testing.T, ctx context.Context, p view.Previews, run string) *page {
	t.Helper()
	pg := &page{text: map[string]string{}, attempt: map[string]int{}}
	pg.follow(t, ctx, p, run)
	return pg
}

// follow applies the previews of a new watch of run to the page, as a
// page that reconnects does; the channel it returns is closed when the
// watch has ended (ctx done) and nothing more of it reaches the page.
func (pg *page) follow(t *testing.T, ctx context.Context, p view.Previews, run string) <-chan struct{} {
	t.Helper()
	ch, err := p.Watch(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for pv := range ch {
			pg.apply(pv)
		}
	}()
	return done
}

func (p *page) apply(pv view.Preview) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, pv)
	switch {
	case pv.Ended:
	case pv.Superseded:
		if pv.Attempt == 0 || p.attempt[pv.CallID] == pv.Attempt {
			delete(p.text, pv.CallID)
			delete(p.attempt, pv.CallID)
		}
	default:
		if pv.Whole || p.attempt[pv.CallID] != pv.Attempt {
			p.text[pv.CallID] = ""
		}
		p.attempt[pv.CallID] = pv.Attempt
		p.text[pv.CallID] += pv.Text
	}
}

// shows waits until the page shows text for call (after superseding and
// all), failing after 10 s; "" waits for no text.
func (p *page) shows(t *testing.T, call, text string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.mu.Lock()
		got := p.text[call]
		p.mu.Unlock()
		if got == text {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page shows %q for %s, want %q", got, call, text)
		}
		time.Sleep(time.Millisecond)
	}
}

// ended waits until the page was told that call ended.
func (p *page) ended(t *testing.T, call string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.mu.Lock()
		for _, pv := range p.got {
			if pv.CallID == call && pv.Ended {
				p.mu.Unlock()
				return
			}
		}
		p.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("the page was not told that %s ended", call)
		}
		time.Sleep(time.Millisecond)
	}
}

func delta(run, call string, step, attempt int, text string) polyloop.Event {
	return polyloop.Event{Kind: polyloop.EventModelDelta, RunID: run, Step: step, CallID: call, Attempt: 1, Delta: &polyloop.Delta{Attempt: attempt, Text: text}}
}

func superseded(run, call string, step, attempt int) polyloop.Event {
	ev := polyloop.Event{Kind: polyloop.EventCandidateSuperseded, RunID: run, Step: step, CallID: call}
	if attempt > 0 {
		ev.Delta = &polyloop.Delta{Attempt: attempt, Superseded: true}
	}
	return ev
}

func finished(run, call string, step int) polyloop.Event {
	return polyloop.Event{Kind: polyloop.EventModelCallFinished, RunID: run, Step: step, CallID: call, Reply: &polyloop.ModelReply{Text: "x"}}
}

func emit(t *testing.T, s *view.PreviewSink, evs ...polyloop.Event) {
	t.Helper()
	for _, ev := range evs {
		if err := s.Emit(context.Background(), ev); err != nil {
			t.Fatalf("Emit %s: %v", ev.Kind, err)
		}
	}
}

// TestPreviewSinkKeepsTheCurrentAttempt: a page shows the deltas of the
// current attempt; a superseded attempt's text disappears and the next
// attempt's text is never glued to it; a whole call superseded disappears.
func TestPreviewSinkKeepsTheCurrentAttempt(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := view.NewPreviewSink()
	if !s.WantsDeltas() {
		t.Fatal("the preview sink does not want deltas: its runners would not stream")
	}
	pg := watch(t, ctx, s, "r")
	emit(t, s, delta("r", "m1.1", 1, 1, "Hel"), delta("r", "m1.1", 1, 1, "lo"))
	pg.shows(t, "m1.1", "Hello")
	emit(t, s, superseded("r", "m1.1", 1, 1))
	pg.shows(t, "m1.1", "")
	emit(t, s, delta("r", "m1.1", 1, 2, "World"))
	pg.shows(t, "m1.1", "World")
	// A client that starts attempt 3 without superseding 2: 3 replaces it.
	emit(t, s, delta("r", "m1.1", 1, 3, "Again"))
	pg.shows(t, "m1.1", "Again")
	// The whole call superseded (it failed, or was cancelled).
	emit(t, s, superseded("r", "m1.1", 1, 0))
	pg.shows(t, "m1.1", "")
	// A superseded attempt other than the one shown changes nothing.
	emit(t, s, delta("r", "m1.2", 1, 1, "kept"), superseded("r", "m1.2", 1, 7))
	pg.shows(t, "m1.2", "kept")
	pg.mu.Lock()
	defer pg.mu.Unlock()
	for _, pv := range pg.got {
		if strings.Contains(pv.Text, "Hello") && strings.Contains(pv.Text, "World") {
			t.Errorf("two attempts' texts in one preview: %+v", pv)
		}
	}
}

// TestPreviewSinkForgetsFinishedCalls: at model_call_finished the page is
// told the call ended (its record replaces the preview) and the sink
// forgets the text: a page opened later gets nothing of it.
func TestPreviewSinkForgetsFinishedCalls(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := view.NewPreviewSink()
	pg := watch(t, ctx, s, "r")
	emit(t, s, delta("r", "m1.1", 1, 1, "answer"))
	pg.shows(t, "m1.1", "answer")
	emit(t, s, finished("r", "m1.1", 1))
	pg.ended(t, "m1.1")
	late := watch(t, ctx, s, "r")
	emit(t, s, delta("r", "m2.1", 2, 1, "next"))
	late.shows(t, "m2.1", "next")
	late.mu.Lock()
	defer late.mu.Unlock()
	if _, ok := late.text["m1.1"]; ok {
		t.Errorf("a page opened after the call finished shows its preview %q", late.text["m1.1"])
	}
}

// TestPreviewSinkCatchesUpAndIsolatesRuns: a page opened while a call
// streams gets its text so far, once; a page of another run gets none;
// run_finished forgets the run.
func TestPreviewSinkCatchesUpAndIsolatesRuns(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := view.NewPreviewSink()
	emit(t, s, delta("r", "m1.1", 1, 1, "so "), delta("r", "m1.1", 1, 1, "far"))
	pg := &page{text: map[string]string{}, attempt: map[string]int{}}
	first, drop := context.WithCancel(ctx)
	gone := pg.follow(t, first, s, "r")
	other := watch(t, ctx, s, "q")
	pg.shows(t, "m1.1", "so far")
	// The page's connection drops and it reconnects (a new watch applied
	// to the same page): it shows the text once, not twice.
	drop()
	<-gone
	pg.follow(t, ctx, s, "r")
	emit(t, s, delta("r", "m1.1", 1, 1, "!"))
	pg.shows(t, "m1.1", "so far!")
	emit(t, s, polyloop.Event{Kind: polyloop.EventRunFinished, RunID: "r"})
	pg.ended(t, "m1.1")
	other.mu.Lock()
	defer other.mu.Unlock()
	if len(other.got) != 0 {
		t.Errorf("a page of another run got %+v", other.got)
	}
}

// TestPreviewSinkNeverBlocksARun: deltas that no page reads do not stall
// Emit; the page, when it reads, gets them coalesced and in order; the
// text kept is bounded by Max.
func TestPreviewSinkNeverBlocksARun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &view.PreviewSink{Max: 5000}
	ch, err := s.Watch(ctx, "r") // never read until every delta is in
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := 0; i < 10000; i++ {
		emit(t, s, delta("r", "m1.1", 1, 1, "ab"))
		if want.Len() < 5000 {
			want.WriteString("ab")
		}
	}
	pg := &page{text: map[string]string{}, attempt: map[string]int{}}
	go func() {
		for pv := range ch {
			pg.apply(pv)
		}
	}()
	pg.shows(t, "m1.1", want.String())
}

// TestPreviewSinkShowsToolCallArguments: a tool call's argument fragments
// are shown after its name, on a line of their own.
func TestPreviewSinkShowsToolCallArguments(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := view.NewPreviewSink()
	pg := watch(t, ctx, s, "r")
	ev := func(d polyloop.Delta) polyloop.Event {
		return polyloop.Event{Kind: polyloop.EventModelDelta, RunID: "r", Step: 1, CallID: "m1.1", Attempt: 1, Delta: &d}
	}
	emit(t, s, ev(polyloop.Delta{Attempt: 1, Text: "Let me look."}),
		ev(polyloop.Delta{Attempt: 1, ToolCall: 0, ToolCallID: "c1", ToolName: "echo", Args: `{"te`}),
		ev(polyloop.Delta{Attempt: 1, ToolCall: 0, Args: `xt":"x"}`}))
	pg.shows(t, "m1.1", "Let me look.\n→ echo {\"text\":\"x\"}")
}

// BenchmarkPreviewSinkEmit is the cost of one delta to the run's driving
// process: with no page open, and with a page reading as it can.
func BenchmarkPreviewSinkEmit(b *testing.B) {
	for _, pages := range []int{0, 1} {
		b.Run(map[int]string{0: "no page", 1: "one page"}[pages], func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s := view.NewPreviewSink()
			for range pages {
				ch, _ := s.Watch(ctx, "r")
				go func() {
					for range ch {
					}
				}()
			}
			ev := delta("r", "m1.1", 1, 1, "a fragment ")
			fin := finished("r", "m1.1", 1)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				_ = s.Emit(ctx, ev)
				if i%1000 == 999 { // a reply of 1,000 deltas, then the next call
					_ = s.Emit(ctx, fin)
				}
			}
		})
	}
}
