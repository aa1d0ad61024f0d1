package sweep

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
)

// A sweep runs every agent on every task for every epoch, retries the
// failed model calls as new attempts linked to the earlier ones, scores
// what finished, and run again does nothing.
func TestSweepRunsRetriesAndScores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := &faultModel{
		fail: func(task string, epoch, attempt int) bool {
			return task == "t1" && attempt == 1 || task == "t2" // t2 fails every attempt
		},
		wrong: func(task string) bool { return task == "t3" },
	}
	def := Definition{Name: "arith", Agents: []*Agent{testAgent("a", m), testAgent("b", m)}, Tasks: numberTasks(5), Epochs: 2,
		Retry: RetryPolicy{Attempts: 3, Backoff: time.Millisecond}, Scorers: []Scorer{Exact("exact", MatchOptions{})}, Concurrency: 3}
	s, err := New(def)
	if err != nil {
		t.Fatal(err)
	}
	store := memstore.New()
	var evs eventLog
	res, err := s.Run(ctx, RunOptions{Store: store, Events: evs.add})
	if err != nil {
		t.Fatal(err)
	}
	p := res.Progress
	// 5 tasks × 2 agents × 2 epochs; t2's 4 outcomes are llm_error after
	// 3 attempts, t1's 4 took 2 attempts.
	if p.Total != 20 || p.Done != 20 || p.StopReasons[polyloop.StopCompleted] != 16 || p.StopReasons[polyloop.StopLLMError] != 4 {
		t.Errorf("progress %+v", p)
	}
	if want := 20 + 4 + 8; p.Runs != want {
		t.Errorf("%d runs, want %d", p.Runs, want)
	}
	if evs.count(EventRetryScheduled) != 12 || evs.count(EventRunScored) != 16 {
		t.Errorf("%d retries, %d scored", evs.count(EventRetryScheduled), evs.count(EventRunScored))
	}
	// The attempts are linked and scored as the policy says.
	coord := CoordID("arith", s.Definition().Agents[0].Hash(), "t2", 1)
	states, err := store.Coords(ctx, "arith", []string{coord, CoordID("arith", s.Definition().Agents[0].Hash(), "t3", 2)})
	if err != nil || len(states) != 4 {
		t.Fatalf("states %+v, %v", states, err)
	}
	for i, st := range states[:3] {
		if st.Attempt != i+1 || (i > 0 && st.Previous != states[i-1].RunID) || st.Run.StopReason != polyloop.StopLLMError || len(st.Scores) != 0 {
			t.Errorf("attempt %d of t2: %+v", i+1, st)
		}
	}
	if sc := states[3].Scores; len(sc) != 1 || sc[0].Value != 0 || sc[0].Scorer != "exact" {
		t.Errorf("t3's wrong answer scored %+v", sc)
	}
	records := store.Len()
	calls := m.calls.Load()
	res, err = s.Run(ctx, RunOptions{Store: store})
	if err != nil || res.Progress.Done != 20 || res.Progress.Skipped != 20 || store.Len() != records || m.calls.Load() != calls {
		t.Errorf("run again: %+v, %v; records %d → %d, calls %d → %d", res.Progress, err, records, store.Len(), calls, m.calls.Load())
	}
}

// Stop stops the sweep gracefully: every run under way stops at its next
// step boundary, with nothing of unknown outcome, nothing new starts, and
// the sweep run again goes on without an extra attempt.
func TestSweepStopsGracefully(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := &faultModel{delay: 3 * time.Millisecond}
	s, err := New(Definition{Name: "stop", Agents: []*Agent{testAgent("a", m)}, Tasks: numberTasks(40), Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	store := memstore.New()
	stop := make(chan struct{})
	var once sync.Once
	var finished atomic.Int32
	res, err := s.Run(ctx, RunOptions{Store: store, Stop: stop, Events: func(ev Event) {
		if ev.Kind == EventRunFinished && finished.Add(1) == 5 {
			once.Do(func() { close(stop) })
		}
	}})
	if !errors.Is(err, ErrStopped) || res.Progress.Done >= 40 {
		t.Fatalf("stopped: %+v, %v", res.Progress, err)
	}
	st, err := ComputeStats(ctx, store, "stop", StatsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g := st.Groups[0]; g.Runs.UnknownModelCalls != 0 || g.Runs.UnknownActions != 0 || g.Runs.Unfinished != res.Progress.Stopped {
		t.Errorf("after the stop: %+v (progress %+v)", g.Runs, res.Progress)
	}
	res, err = s.Run(ctx, RunOptions{Store: store})
	if err != nil || res.Progress.Done != 40 || res.Progress.Runs != 40 {
		t.Errorf("going on: %+v, %v", res.Progress, err)
	}
}

// A run whose lease another live process holds is left to it; once it is
// free, the sweep runs it.
func TestSweepLeavesHeldRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := &faultModel{}
	s, err := New(Definition{Name: "held", Agents: []*Agent{testAgent("a", m)}, Tasks: numberTasks(3)})
	if err != nil {
		t.Fatal(err)
	}
	store := memstore.New()
	held := RunID(CoordID("held", s.Definition().Agents[0].Hash(), "t2", 1), 1)
	lease, err := store.AcquireLease(ctx, held, polyloop.LeaseRequest{Owner: polyloop.LeaseOwner{Host: "elsewhere", PID: 1, Token: "tok"}})
	if err != nil {
		t.Fatal(err)
	}
	var evs eventLog
	res, err := s.Run(ctx, RunOptions{Store: store, Events: evs.add})
	if err != nil || res.Progress.Held != 1 || res.Progress.Done != 2 || evs.count(EventRunHeld) != 1 {
		t.Fatalf("with t2 held: %+v, %v", res.Progress, err)
	}
	if log, _ := polyloop.ReadLog(ctx, store, held); !log.Empty() {
		t.Errorf("the held run has %d records", len(log.Records))
	}
	lease.Release(ctx)
	if res, err = s.Run(ctx, RunOptions{Store: store}); err != nil || res.Progress.Done != 3 || res.Progress.Skipped != 2 {
		t.Errorf("released: %+v, %v", res.Progress, err)
	}
}

// A task whose input changed under the same id is not run again: its
// coordinates are reported, the others go on.
func TestSweepReportsChangedTasks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := &faultModel{}
	tasks := numberTasks(3)
	s, _ := New(Definition{Name: "chg", Agents: []*Agent{testAgent("a", m)}, Tasks: tasks, Epochs: 2})
	store := memstore.New()
	if _, err := s.Run(ctx, RunOptions{Store: store}); err != nil {
		t.Fatal(err)
	}
	tasks[1].Input = "7"
	s, _ = New(Definition{Name: "chg", Agents: []*Agent{testAgent("a", m)}, Tasks: tasks, Epochs: 3})
	var evs eventLog
	res, err := s.Run(ctx, RunOptions{Store: store, Events: evs.add})
	// t2 is left alone at every epoch, the new one included.
	if err != nil || res.Progress.Changed != 3 || res.Progress.Done != 6 || evs.count(EventTaskChanged) != 3 {
		t.Errorf("%+v, %v", res.Progress, err)
	}
}

// Pending and Execute are what a queue uses: Pending records the entries
// and lists the runs to do; Execute runs one, scores it, and records the
// next attempt of a retried stop reason.
func TestPendingThenExecute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := &faultModel{fail: func(task string, _, attempt int) bool { return task == "t1" && attempt == 1 }}
	s, err := New(Definition{Name: "q", Agents: []*Agent{testAgent("a", m)}, Tasks: numberTasks(3),
		Scorers: []Scorer{Exact("exact", MatchOptions{})}})
	if err != nil {
		t.Fatal(err)
	}
	store := memstore.New()
	var jobs []string
	if err := s.Pending(ctx, store, func(st ledgerState) error { jobs = append(jobs, st.RunID); return nil }); err != nil || len(jobs) != 3 {
		t.Fatalf("pending %v, %v", jobs, err)
	}
	if m.calls.Load() != 0 {
		t.Fatal("Pending ran something")
	}
	for len(jobs) > 0 {
		id := jobs[0]
		jobs = jobs[1:]
		out, err := s.Execute(ctx, store, id)
		if err != nil {
			t.Fatal(err)
		}
		if out.Next != nil {
			if out.Result.StopReason != polyloop.StopLLMError || out.Next.Previous != id || out.Next.Attempt != 2 {
				t.Errorf("next %+v after %+v", out.Next, out.Result)
			}
			jobs = append(jobs, out.Next.RunID)
		} else if len(out.Scores) != 1 || out.Scores[0].Value != 1 {
			t.Errorf("%s: scores %+v", id, out.Scores)
		}
	}
	var again []string
	s.Pending(ctx, store, func(st ledgerState) error { again = append(again, st.RunID); return nil })
	if len(again) != 0 {
		t.Errorf("pending after every job: %v", again)
	}
	if _, err := s.Execute(ctx, store, "q.nope.t1.e1.a1"); !errors.Is(err, ErrUnknownRun) {
		t.Errorf("an unknown run: %v", err)
	}
	out, err := s.Execute(ctx, store, jobs0(t, store))
	if err != nil || out.Started || out.Resumed || len(out.Scores) != 0 {
		t.Errorf("a finished, scored run executed again: %+v, %v", out, err)
	}
}

func jobs0(t *testing.T, store *memstore.Store) string {
	t.Helper()
	page, err := store.Page(context.Background(), "q", "", 1)
	if err != nil || len(page) != 1 {
		t.Fatal(page, err)
	}
	return page[0].RunID
}

// An agent the runner refuses is refused for every task: the sweep stops
// at the first refusal instead of failing every run.
func TestSweepStopsOnARefusedAgent(t *testing.T) {
	t.Parallel()
	a := testAgent("a", &faultModel{})
	a.Agent.Limits.MaxCostUSD = 1 // the fault model knows no price
	s, err := New(Definition{Name: "refused", Agents: []*Agent{a}, Tasks: numberTasks(50), Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Run(context.Background(), RunOptions{Store: memstore.New()})
	if !errors.Is(err, polyloop.ErrUncheckableBudget) || res.Progress.Failed > 2 {
		t.Errorf("%+v, %v", res.Progress, err)
	}
}
