package sweepqueue

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/sweep"
)

// River hands out again the job of a run that a live worker drives (as
// its rescuer does after RescueAfter): the second execution meets the
// run's lease and snoozes, so the run is driven by one execution at a
// time — no two model calls of it overlap, in one process or two — and
// its job completes once, with the first driver's result.
func TestWorkerLiveRescue(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	watch := &callWatch{}
	const steps = 8
	gate := make(chan struct{})
	s := newSweep(t, "rescue", 1, &stepModel{steps: steps, delay: 20 * time.Millisecond, watch: watch, gate: gate}, sweep.RetryPolicy{})
	if _, err := f.q.Enqueue(ctx, s, f.store); err != nil {
		t.Fatal(err)
	}
	id := sweep.RunID(sweep.CoordID("rescue", agentHash(t, f, "rescue"), "t1", 1), 1)
	var ev events
	// The first worker takes one job at a time: the job handed out again
	// can only go to the second, which snoozes it on the lease, takes it
	// again, snoozes it again.
	f.startWorker(t, s, &ev, WorkerOptions{ID: "first", Concurrency: 1, Slice: time.Minute, HeldDelay: 40 * time.Millisecond})
	deadline := time.Now().Add(20 * time.Second)
	for calls, _ := watch.count(id); calls < 2; calls, _ = watch.count(id) {
		if time.Now().After(deadline) {
			t.Fatal("the first worker did not drive the run")
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.startWorker(t, s, &ev, WorkerOptions{ID: "second", Concurrency: 2, Slice: time.Minute, HeldDelay: 40 * time.Millisecond})
	tag, err := f.q.pool.Exec(ctx, `UPDATE `+f.q.table()+` SET state = 'available', scheduled_at = now() WHERE args->>'run_id' = $1 AND state = 'running'`, id)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("handing the running job out again: %v, %d rows", err, tag.RowsAffected())
	}
	// The run waits at its third call until the second execution has met
	// the lease.
	heldSnoozes := func() int {
		n := 0
		for _, e := range ev.list() {
			if e.Verdict.Action == Snooze && strings.Contains(e.Verdict.Reason, "held") {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(30 * time.Second); heldSnoozes() < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			close(gate)
			t.Fatalf("the job handed out again was not executed against the held lease: %+v", ev.list())
		}
	}
	close(gate)
	f.waitSettled(t, 30*time.Second)

	calls, overlaps := watch.count(id)
	if overlaps != 0 {
		t.Fatalf("%d model calls of the run overlapped another: two drivers", overlaps)
	}
	if calls != steps+1 {
		t.Fatalf("%d model calls, want %d: the run was driven more than once", calls, steps+1)
	}
	drove, held := 0, 0
	for _, e := range ev.list() {
		if e.Started || e.Resumed {
			drove++
		}
		if e.Verdict.Action == Snooze && strings.Contains(e.Verdict.Reason, "held") {
			held++
			if e.Started || e.Resumed {
				t.Fatalf("an execution that met the lease ran steps: %+v", e)
			}
		}
	}
	if drove != 1 || held < 2 {
		t.Fatalf("%d executions drove the run (want 1), %d snoozed on its lease (want some): %+v", drove, held, ev.list())
	}
	j := f.job(t, id)
	if j.state != "completed" || j.output["stop_reason"] != string(polyloop.StopCompleted) {
		t.Fatalf("the job: %+v, want completed once with the run's result", j)
	}
	var jobs int
	if err := f.q.pool.QueryRow(ctx, `SELECT count(*) FROM `+f.q.table()+` WHERE args->>'run_id' = $1`, id).Scan(&jobs); err != nil || jobs != 1 {
		t.Fatalf("%d jobs of the run, %v; want 1", jobs, err)
	}
	runs, err := f.store.Runs(ctx, []string{id})
	if err != nil || len(runs) != 1 || runs[0].Run == nil || !runs[0].Run.Finished || runs[0].Run.StopReason != polyloop.StopCompleted {
		t.Fatalf("the run: %+v, %v", runs, err)
	}
}

// A run taken back from its worker goes ahead of the runs not started:
// the first worker drives t1 (its job raised to PriorityStarted) and holds
// it; River hands t1's job out again (as its rescuer does for a dead
// worker's: state and scheduled time change, the priority stays); a second
// worker, with one slot, takes t1's job first — not t2's or t3's, which
// were scheduled earlier, at the enqueue, but have not started.
func TestRescuedRunGoesFirst(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	watch := &callWatch{}
	gate := make(chan struct{})
	released := false
	release := func() {
		if !released {
			close(gate)
			released = true
		}
	}
	defer release()
	s := newSweep(t, "first", 3, &stepModel{steps: 4, watch: watch, gate: gate}, sweep.RetryPolicy{})
	if _, err := f.q.Enqueue(ctx, s, f.store); err != nil {
		t.Fatal(err)
	}
	runID := func(task string) string {
		return sweep.RunID(sweep.CoordID("first", agentHash(t, f, "first"), task, 1), 1)
	}
	f.startWorker(t, s, nil, WorkerOptions{ID: "first", Concurrency: 1, Slice: time.Minute, HeldDelay: 40 * time.Millisecond})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if calls, _ := watch.count(runID("t1")); calls >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first worker did not drive t1")
		}
	}
	priorities := map[string]int{}
	for _, task := range []string{"t1", "t2", "t3"} {
		var p int
		if err := f.q.pool.QueryRow(ctx, `SELECT priority FROM `+f.q.table()+` WHERE args->>'run_id' = $1`, runID(task)).Scan(&p); err != nil {
			t.Fatal(err)
		}
		priorities[task] = p
	}
	if priorities["t1"] != PriorityStarted || priorities["t2"] != PriorityNew || priorities["t3"] != PriorityNew {
		t.Fatalf("priorities %v: want t1 (started) %d, the others %d", priorities, PriorityStarted, PriorityNew)
	}
	tag, err := f.q.pool.Exec(ctx, `UPDATE `+f.q.table()+` SET state = 'available', scheduled_at = now() WHERE args->>'run_id' = $1 AND state = 'running'`, runID("t1"))
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("handing t1's job out again: %v, %d rows", err, tag.RowsAffected())
	}
	var second events
	f.startWorker(t, s, &second, WorkerOptions{ID: "second", Concurrency: 1, Slice: time.Minute, HeldDelay: 40 * time.Millisecond})
	// t1's execution meets the first worker's lease and ends at once; t2's
	// or t3's would wait at the gate.
	for deadline := time.Now().Add(5 * time.Second); len(second.list()) == 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
	}
	release()
	f.waitSettled(t, 30*time.Second)
	if evs := second.list(); len(evs) == 0 || evs[0].RunID != runID("t1") {
		t.Fatalf("the second worker's executions: %+v; want t1's first, the rescued run", evs)
	}
	if calls, overlaps := watch.count(runID("t1")); overlaps != 0 || calls != 5 {
		t.Fatalf("t1: %d model calls, %d overlapping; want 5, none", calls, overlaps)
	}
}
