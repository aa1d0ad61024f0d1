package sweepqueue

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/sweep"
)

// A sweep enqueued and run by a worker: every job completes with its run's
// result as output, the runs longer than a slice snooze and are continued,
// the statistics are the sweep's, and enqueuing again adds nothing.
func TestWorkerRunsSweep(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	m := &stepModel{steps: 4, delay: 15 * time.Millisecond}
	s := newSweep(t, "slices", 6, m, sweep.RetryPolicy{})
	res, err := f.q.Enqueue(ctx, s, f.store)
	if err != nil {
		t.Fatal(err)
	}
	if res.Inserted != 6 || res.Duplicates != 0 {
		t.Fatalf("Enqueue = %+v, want 6 inserted", res)
	}
	if res, err := f.q.Enqueue(ctx, s, f.store); err != nil || res.Inserted != 0 || res.Duplicates != 6 {
		t.Fatalf("second Enqueue = %+v, %v; want 6 duplicates", res, err)
	}
	var ev events
	f.startWorker(t, s, &ev, WorkerOptions{Concurrency: 3, Slice: 40 * time.Millisecond})
	st := f.waitSettled(t, 30*time.Second)
	if st.States["completed"] != 6 || len(st.States) != 1 {
		t.Fatalf("states %v, want 6 completed", st.States)
	}
	snoozed, resumed := 0, 0
	for _, e := range ev.list() {
		if e.Verdict.Action == Snooze {
			snoozed++
		}
		if e.Resumed {
			resumed++
		}
	}
	if snoozed == 0 || resumed == 0 {
		t.Fatalf("%d snoozes and %d resumptions: the 75 ms runs were not cut into 40 ms slices", snoozed, resumed)
	}
	for i := 1; i <= 6; i++ {
		id := sweep.RunID(sweep.CoordID("slices", agentHash(t, f, "slices"), "t"+strconv.Itoa(i), 1), 1)
		j := f.job(t, id)
		if j.output["stop_reason"] != "completed" || j.output["scores"].(map[string]any)["exact"] != 1.0 || j.attempt != 1 {
			t.Fatalf("job of %s: %+v", id, j)
		}
	}
	stats, err := sweep.ComputeStats(ctx, f.store, "slices", sweep.StatsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g := stats.Groups[0]
	if g.Settled != 6 || g.OutcomeStopReasons[polyloop.StopCompleted] != 6 || g.Accuracy.Mean != 1 {
		t.Fatalf("stats: %+v", g)
	}
	if res, err := f.q.Enqueue(ctx, s, f.store); err != nil || res.Inserted != 0 {
		t.Fatalf("Enqueue of a finished sweep = %+v, %v; want nothing", res, err)
	}
}

// A run that finishes llm_error gets its next attempt as a new job,
// inserted in the transaction that completes the first.
func TestWorkerRetriesAsNextJob(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	m := &stepModel{steps: 1, fail: func(attempt int) bool { return attempt == 1 }}
	s := newSweep(t, "retry", 2, m, sweep.RetryPolicy{Attempts: 2, Backoff: 30 * time.Millisecond})
	if _, err := f.q.Enqueue(ctx, s, f.store); err != nil {
		t.Fatal(err)
	}
	f.startWorker(t, s, nil, WorkerOptions{Concurrency: 2})
	st := f.waitSettled(t, 30*time.Second)
	if st.States["completed"] != 4 {
		t.Fatalf("states %v, want 4 completed (2 runs × 2 attempts)", st.States)
	}
	coord := sweep.CoordID("retry", agentHash(t, f, "retry"), "t1", 1)
	first, second := f.job(t, sweep.RunID(coord, 1)), f.job(t, sweep.RunID(coord, 2))
	if first.output["stop_reason"] != "llm_error" || first.output["next"] != sweep.RunID(coord, 2) {
		t.Fatalf("first attempt's job: %+v", first)
	}
	if second.output["stop_reason"] != "completed" {
		t.Fatalf("second attempt's job: %+v", second)
	}
}

// A run whose lease is held elsewhere is snoozed, never completed, and
// runs once the lease is free.
func TestWorkerSnoozesHeldRun(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s := newSweep(t, "held", 1, &stepModel{steps: 1}, sweep.RetryPolicy{})
	if _, err := f.q.Enqueue(ctx, s, f.store); err != nil {
		t.Fatal(err)
	}
	id := sweep.RunID(sweep.CoordID("held", agentHash(t, f, "held"), "t1", 1), 1)
	lease, err := f.store.AcquireLease(ctx, id, polyloop.LeaseRequest{Owner: polyloop.LeaseOwner{Host: "elsewhere", PID: 1, Token: uuid.NewString(), Since: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	var ev events
	f.startWorker(t, s, &ev, WorkerOptions{HeldDelay: 50 * time.Millisecond})
	deadline := time.Now().Add(10 * time.Second)
	for countAction(ev.list(), Snooze) < 3 {
		if time.Now().After(deadline) {
			t.Fatal("no snoozes of the held run")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if j := f.job(t, id); j.state == "completed" || j.attempt > 1 {
		t.Fatalf("held run's job: %+v", j)
	}
	if runs, err := f.store.Runs(ctx, []string{id}); err != nil || len(runs) != 1 || runs[0].Run != nil {
		t.Fatalf("the held run has records: %+v, %v", runs, err)
	}
	for _, e := range ev.list() {
		if e.Started || e.Resumed {
			t.Fatalf("an execution ran the held run: %+v", e)
		}
		if !strings.Contains(e.Verdict.Reason, "held") {
			t.Fatalf("snooze reason %q", e.Verdict.Reason)
		}
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	f.waitSettled(t, 10*time.Second)
	if j := f.job(t, id); j.state != "completed" || j.output["stop_reason"] != "completed" {
		t.Fatalf("released run's job: %+v", j)
	}
}

// A panic of a seam is retried and cancels the job at its third attempt,
// with the panic as its last error.
func TestWorkerCancelsAfterFailedAttempts(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s := newSweep(t, "panics", 1, &stepModel{steps: 1, panic: true}, sweep.RetryPolicy{})
	if _, err := f.q.Enqueue(ctx, s, f.store); err != nil {
		t.Fatal(err)
	}
	var ev events
	f.startWorker(t, s, &ev, WorkerOptions{})
	st := f.waitSettled(t, 20*time.Second)
	if st.States["cancelled"] != 1 || len(st.Cancelled) != 1 {
		t.Fatalf("states %v, cancelled %+v", st.States, st.Cancelled)
	}
	c := st.Cancelled[0]
	if c.Attempt != 3 || !strings.Contains(c.Error, "injected panic") {
		t.Fatalf("cancelled job: %+v", c)
	}
	if got := countAction(ev.list(), Retry); got != 2 {
		t.Fatalf("%d retries before the cancellation, want 2", got)
	}
}

// A graceful stop gives the job under way back to the queue, available
// at once and without using an attempt; another worker finishes the run
// from its log.
func TestWorkerStopGivesJobBack(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	m := &stepModel{steps: 6, delay: 60 * time.Millisecond}
	s := newSweep(t, "stop", 1, m, sweep.RetryPolicy{})
	if _, err := f.q.Enqueue(ctx, s, f.store); err != nil {
		t.Fatal(err)
	}
	id := sweep.RunID(sweep.CoordID("stop", agentHash(t, f, "stop"), "t1", 1), 1)
	var ev events
	w := f.startWorker(t, s, &ev, WorkerOptions{Slice: time.Minute})
	deadline := time.Now().Add(10 * time.Second)
	for f.job(t, id).state != "running" {
		if time.Now().After(deadline) {
			t.Fatal("the job never ran")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(150 * time.Millisecond) // a step or two
	st, err := f.q.Status(ctx, StatusOptions{StuckAfter: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Workers) != 1 || st.Workers[0].Worker != w.ID() || len(st.Workers[0].Jobs) != 1 || st.Workers[0].Jobs[0].RunID != id {
		t.Fatalf("running jobs by worker: %+v, want %s running %s", st.Workers, w.ID(), id)
	}
	if len(st.Stuck) != 1 || st.Stuck[0].RunID != id || st.States["running"] != 1 || st.Pending() != 1 {
		t.Fatalf("stuck after 100 ms: %+v, states %v", st.Stuck, st.States)
	}
	if st, err := f.q.Status(ctx, StatusOptions{}); err != nil || len(st.Stuck) != 0 {
		t.Fatalf("stuck after the default 2 min: %+v, %v", st.Stuck, err)
	}
	if err := w.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	j := f.job(t, id)
	if j.state != "available" || j.attempt != 0 || j.errors != 0 {
		t.Fatalf("job after a graceful stop: %+v, want available, attempt 0, no error", j)
	}
	runs, err := f.store.Runs(ctx, []string{id})
	if err != nil || len(runs) != 1 || runs[0].Run == nil || runs[0].Run.Finished {
		t.Fatalf("the run after the stop: %+v, %v; want started, unfinished", runs, err)
	}
	f.startWorker(t, s, &ev, WorkerOptions{ID: "second"})
	f.waitSettled(t, 10*time.Second)
	if j := f.job(t, id); j.state != "completed" || j.output["stop_reason"] != "completed" {
		t.Fatalf("job after the second worker: %+v", j)
	}
	last := ev.list()[len(ev.list())-1]
	if !last.Resumed {
		t.Fatalf("the second worker did not resume the run: %+v", last)
	}
}

func countAction(evs []Event, a Action) int {
	n := 0
	for _, e := range evs {
		if e.Verdict.Action == a {
			n++
		}
	}
	return n
}

// agentHash is the hash of the one agent of a recorded sweep.
func agentHash(t *testing.T, f *fixture, name string) string {
	t.Helper()
	m, err := sweep.ReadManifest(context.Background(), f.store, name)
	if err != nil {
		t.Fatal(err)
	}
	return m.Agents[0].Hash
}
