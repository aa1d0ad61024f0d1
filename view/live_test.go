package view_test

import (
	"context"
	"github.com/polyloop/polyloop"
	"strings"
	"testing"

	"github.com/polyloop/polyloop/internal/runfixture"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/view"
)

// TestLiveFollowsTheLog: the stream of an unfinished run sends the steps
// that change as a resume appends records, the status, and the end.
func TestLiveFollowsTheLog(t *testing.T) {
	t.Parallel()
	s, st := newServer(t, view.Options{Poll: 5e6})
	log, _ := polyloop.ReadLog(context.Background(), st, runfixture.UnfinishedRun)
	n := len(log.Records)
	events := streamWhile(t, s, "/live?id="+runfixture.UnfinishedRun+"&seq=0", func() {
		clock := runfixture.NewClock(runfixture.Base.Add(48 * 3600e9))
		r := runfixture.Runner(st, clock, 0.000001, runfixture.Echo("c1", "x"), runfixture.Echo("c2", "y"), scriptmodel.Reply("done"))
		if _, err := r.Resume(context.Background(), runfixture.UnfinishedRun, runfixture.Agent("beta", "You echo twice.")); err != nil {
			t.Errorf("resume: %v", err)
		}
	})
	var names []string
	for _, e := range events {
		names = append(names, e.Name)
	}
	if len(events) < 5 || events[0].Name != "steps" || events[0].ID != itoa(n) || events[len(events)-1].Name != "end" || events[len(events)-1].Data != "completed" {
		t.Fatalf("events %q (first id %q), want steps at %d records first and end completed last", names, events[0].ID, n)
	}
	first := events[0].Data
	if !strings.Contains(first, `id="step-1"`) || !strings.Contains(first, `id="step-2"`) || !strings.Contains(first, "outcome unknown") {
		t.Errorf("first steps event lacks the steps so far:\n%s", first)
	}
	var later strings.Builder
	for _, e := range events[1:] {
		later.WriteString(e.Data)
	}
	all := later.String()
	for _, want := range []string{`id="step-2"`, `id="step-3"`, "attempt 2", `<span class="badge completed">completed</span>`, "<b>#2</b>"} {
		if !strings.Contains(all, want) {
			t.Errorf("later events lack %q", want)
		}
	}
	if strings.Contains(all, `id="step-1"`) {
		t.Error("a later event resent step 1, which did not change")
	}
}

// TestLiveResumesFromLastEventID: a reconnecting browser gets only what it
// lacks; a finished run's stream ends at once.
func TestLiveResumesFromLastEventID(t *testing.T) {
	t.Parallel()
	s, st := newServer(t, view.Options{Poll: 5e6})
	log, _ := polyloop.ReadLog(context.Background(), st, runfixture.BatchRun)
	events := streamWhile(t, s, "/live?id="+runfixture.BatchRun+"&seq="+itoa(len(log.Records)-2), nil)
	if len(events) != 3 || events[0].Name != "steps" || strings.Contains(events[0].Data, `id="step-2"`) || !strings.Contains(events[0].Data, `id="step-3"`) {
		t.Errorf("events %+v", events)
	}
}

// fakePreviews streams fixed previews.
type fakePreviews []view.Preview

func (f fakePreviews) Watch(ctx context.Context, runID string) (<-chan view.Preview, error) {
	ch := make(chan view.Preview, len(f))
	for _, p := range f {
		ch <- p
	}
	close(ch)
	return ch, nil
}

// TestLivePreviews: streamed text (the Previews seam) reaches the stream as
// preview events, retractions included.
func TestLivePreviews(t *testing.T) {
	t.Parallel()
	prev := fakePreviews{{Step: 2, CallID: "m2.1", Attempt: 1, Text: "Hel<b>"}, {Step: 2, CallID: "m2.1", Attempt: 1, Superseded: true}}
	s, st := newServer(t, view.Options{Poll: 5e6, Previews: prev})
	done := make(chan struct{})
	events := streamWhile(t, s, "/live?id="+runfixture.UnfinishedRun+"&seq=0", func() {
		defer close(done)
		clock := runfixture.NewClock(runfixture.Base.Add(48 * 3600e9))
		r := runfixture.Runner(st, clock, 0, runfixture.Echo("c1", "x"), runfixture.Echo("c2", "y"), scriptmodel.Reply("done"))
		if _, err := r.Resume(context.Background(), runfixture.UnfinishedRun, runfixture.Agent("beta", "You echo twice.")); err != nil {
			t.Errorf("resume: %v", err)
		}
	})
	<-done
	var got []string
	for _, e := range events {
		if e.Name == "preview" {
			got = append(got, e.Data)
		}
	}
	if len(got) != 2 || got[0] != `{"step":2,"call_id":"m2.1","attempt":1,"text":"Hel\u003cb\u003e"}` || !strings.Contains(got[1], `"superseded":true`) {
		t.Errorf("preview events %q", got)
	}
}
