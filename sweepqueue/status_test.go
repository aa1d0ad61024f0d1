package sweepqueue

import (
	"context"
	"testing"

	"github.com/polyloop/polyloop/sweep"
)

// Status lists at most 10 × Limit running jobs and counts the others;
// the other lists hold at most Limit jobs, their counts in States.
func TestStatusSaysWhatIsLeftOut(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s := newSweep(t, "many", 13, &stepModel{steps: 1}, sweep.RetryPolicy{})
	if _, err := f.q.Enqueue(ctx, s, f.store); err != nil {
		t.Fatal(err)
	}
	// No worker runs: the jobs are made to look taken by two workers, and
	// three of them cancelled.
	if _, err := f.q.pool.Exec(ctx, `UPDATE `+f.q.table()+` SET state = 'running', attempt = 1, attempted_at = now(),
		attempted_by = ARRAY['w'||(id % 2)]`); err != nil {
		t.Fatal(err)
	}
	if _, err := f.q.pool.Exec(ctx, `UPDATE `+f.q.table()+` SET state = 'cancelled', finalized_at = now()
		WHERE id IN (SELECT id FROM `+f.q.table()+` ORDER BY id LIMIT 3)`); err != nil {
		t.Fatal(err)
	}
	st, err := f.q.Status(ctx, StatusOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	listed := 0
	for _, w := range st.Workers {
		listed += len(w.Jobs)
	}
	if st.States["running"] != 10 || listed != 10 || st.RunningNotListed != 0 {
		t.Fatalf("10 running: %d listed, %d not listed, states %v", listed, st.RunningNotListed, st.States)
	}
	if len(st.Cancelled) != 1 || st.States["cancelled"] != 3 {
		t.Fatalf("cancelled: %d listed, states %v; want 1 of 3", len(st.Cancelled), st.States)
	}
	if _, err := f.q.pool.Exec(ctx, `UPDATE `+f.q.table()+` SET state = 'running', finalized_at = NULL WHERE state = 'cancelled'`); err != nil {
		t.Fatal(err)
	}
	if st, err = f.q.Status(ctx, StatusOptions{Limit: 1}); err != nil {
		t.Fatal(err)
	}
	listed = 0
	for _, w := range st.Workers {
		listed += len(w.Jobs)
	}
	if st.States["running"] != 13 || listed != 10 || st.RunningNotListed != 3 {
		t.Fatalf("13 running: %d listed, %d not listed, states %v; want 10 and 3", listed, st.RunningNotListed, st.States)
	}
}
