package sweep

import (
	"context"
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
