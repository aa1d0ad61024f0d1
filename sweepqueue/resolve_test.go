package sweepqueue

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop/sweep"
)

// A sweep enqueued again with a changed agent while a worker runs: the
// worker's kept sweep does not know the new runs' agent, so it resolves
// the sweep again and runs them, instead of cancelling them.
func TestWorkerResolvesChangedSweep(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var mu sync.Mutex
	current := newSweep(t, "edited", 2, &stepModel{steps: 1}, sweep.RetryPolicy{})
	resolves := 0
	resolve := func(_ context.Context, name string) (*sweep.Sweep, error) {
		mu.Lock()
		defer mu.Unlock()
		resolves++
		return current, nil
	}
	if _, err := f.q.Enqueue(ctx, current, f.store); err != nil {
		t.Fatal(err)
	}
	var ev events
	f.startWorker(t, nil, &ev, WorkerOptions{Resolve: resolve})
	if st := f.waitSettled(t, 20*time.Second); st.States["completed"] != 2 {
		t.Fatalf("first version: states %v", st.States)
	}
	edited := newSweep(t, "edited", 2, &stepModel{steps: 2}, sweep.RetryPolicy{}) // another agent: MaxSteps changed
	mu.Lock()
	current = edited
	mu.Unlock()
	if res, err := f.q.Enqueue(ctx, edited, f.store); err != nil || res.Inserted != 2 {
		t.Fatalf("Enqueue of the edited sweep: %+v, %v", res, err)
	}
	st := f.waitSettled(t, 20*time.Second)
	if st.States["completed"] != 4 || len(st.Cancelled) != 0 {
		t.Fatalf("edited version: states %v, cancelled %+v; want 4 completed", st.States, st.Cancelled)
	}
	mu.Lock()
	defer mu.Unlock()
	if resolves != 2 {
		t.Fatalf("%d resolves, want 2 (the first job, then the first run of the changed agent)", resolves)
	}
}

// A sweep the worker cannot rebuild cancels its job at the first attempt,
// with Resolve's reason.
func TestWorkerCancelsUnresolvedSweep(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s := newSweep(t, "gone", 1, &stepModel{steps: 1}, sweep.RetryPolicy{})
	if _, err := f.q.Enqueue(ctx, s, f.store); err != nil {
		t.Fatal(err)
	}
	resolve := func(context.Context, string) (*sweep.Sweep, error) {
		return nil, errors.New("the agent adder of sweep gone changed since it ran")
	}
	var ev events
	f.startWorker(t, s, &ev, WorkerOptions{Resolve: resolve})
	st := f.waitSettled(t, 20*time.Second)
	if len(st.Cancelled) != 1 || st.Cancelled[0].Attempt != 1 || !strings.Contains(st.Cancelled[0].Error, "changed since it ran") {
		t.Fatalf("cancelled %+v, states %v: want the job cancelled at attempt 1 with the reason", st.Cancelled, st.States)
	}
	if n := countAction(ev.list(), Retry); n != 0 {
		t.Fatalf("%d retries of a sweep that cannot be rebuilt", n)
	}
}
