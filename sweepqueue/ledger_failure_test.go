package sweepqueue

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/sweep/ledger"
)

// failingLedger is a store whose ledger calls named in fail return a
// connection error, as a database in failover does.
type failingLedger struct {
	*memstore.Store
	fail map[string]bool
}

var errConnection = fmt.Errorf("failed to connect to `host=db user=polyloop`: dial error: %w", syscall.ECONNREFUSED)

func (s *failingLedger) Runs(ctx context.Context, ids []string) ([]ledger.State, error) {
	if s.fail["Runs"] {
		return nil, errConnection
	}
	return s.Store.Runs(ctx, ids)
}

func (s *failingLedger) AddEntries(ctx context.Context, e []ledger.Entry) error {
	if s.fail["AddEntries"] {
		return errConnection
	}
	return s.Store.AddEntries(ctx, e)
}

func (s *failingLedger) PutScores(ctx context.Context, sc []ledger.Score) error {
	if s.fail["PutScores"] {
		return errConnection
	}
	return s.Store.PutScores(ctx, sc)
}

// A ledger that cannot reach its database (reading the run's entry,
// recording the next attempt, writing the scores) makes the job retry at
// every attempt: a failover must not cancel the jobs running through it.
func TestLedgerFailureRetries(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		call  string
		model *stepModel
		retry sweep.RetryPolicy
	}{
		{"Runs", &stepModel{steps: 1}, sweep.RetryPolicy{}},
		{"AddEntries", &stepModel{steps: 1, fail: func(int) bool { return true }}, sweep.RetryPolicy{Attempts: 2, Backoff: time.Millisecond}},
		{"PutScores", &stepModel{steps: 1}, sweep.RetryPolicy{}},
	} {
		t.Run(c.call, func(t *testing.T) {
			store := &failingLedger{Store: memstore.New(), fail: map[string]bool{}}
			s := newSweep(t, "failover", 1, c.model, c.retry)
			var ids []string
			if err := s.Pending(ctx, store, func(st ledger.State) error { ids = append(ids, st.RunID); return nil }); err != nil || len(ids) != 1 {
				t.Fatalf("Pending: %v, %v", ids, err)
			}
			store.fail[c.call] = true
			out, err := s.Execute(ctx, store, ids[0])
			if err == nil {
				t.Fatalf("Execute with a failing %s returned no error: %+v", c.call, out)
			}
			var pe *polyloop.PersistenceError
			if !errors.As(err, &pe) || !errors.Is(err, syscall.ECONNREFUSED) {
				t.Fatalf("Execute with a failing %s: %v (%T), want a *PersistenceError wrapping the connection error", c.call, err, err)
			}
			for attempt := 1; attempt <= MaxAttempts; attempt++ {
				if v := Judge(out, err, Policy{Attempt: attempt, FailAttempts: 3, HeldDelay: time.Second}); v.Action != Retry {
					t.Fatalf("attempt %d: Judge = %v (%s), want retry", attempt, v.Action, v.Reason)
				}
			}
			store.fail[c.call] = false
			if out, err := s.Execute(ctx, store, ids[0]); err != nil || !out.Finished() {
				t.Fatalf("Execute once the ledger is back: %+v, %v", out, err)
			}
		})
	}
}

// The ledger's own answers are not store failures: a conflict passes
// unchanged and is judged like any other error.
func TestLedgerConflictIsNotPersistence(t *testing.T) {
	ctx := context.Background()
	store := &failingLedger{Store: memstore.New(), fail: map[string]bool{}}
	s := newSweep(t, "conflict", 1, &stepModel{steps: 1}, sweep.RetryPolicy{})
	_, err := s.Execute(ctx, store, "conflict.nope")
	var pe *polyloop.PersistenceError
	if !errors.Is(err, sweep.ErrUnknownRun) || errors.As(err, &pe) {
		t.Fatalf("Execute of a run without an entry: %v", err)
	}
}
