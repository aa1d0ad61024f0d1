package sqlitestore_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/sqlitestore"
)

// cancelAt is workload W's noop that cancels the run at its nth execution,
// leaving the log at "action intent present, step record absent".
type cancelAt struct {
	crashNoop
	n      int32
	calls  atomic.Int32
	cancel context.CancelFunc
}

func (e *cancelAt) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	if e.calls.Add(1) == e.n {
		e.cancel()
		return polyloop.ActionOutcome{}, ctx.Err()
	}
	return e.crashNoop.Execute(ctx, a)
}

// readBarrier makes the first ReadLog of each of n stores wait until all n
// have read, so that racing Resumes plan from the same log.
type readBarrier struct {
	polyloop.Store
	once *sync.Once
	wg   *sync.WaitGroup
}

func (b readBarrier) ReadRows(ctx context.Context, runID string) ([]polyloop.Row, error) {
	l, err := b.Store.ReadRows(ctx, runID)
	b.once.Do(b.wg.Done)
	b.wg.Wait()
	return l, err
}

// TestConcurrentResume: two Resumes of the same interrupted run, through
// two Store handles on one file, plan from the same log; exactly one
// proceeds, the other stops with ErrSeqConflict inside a
// *polyloop.PersistenceError, and the log stays valid and equivalent to the
// uninterrupted run's.
func TestConcurrentResume(t *testing.T) {
	ref := referenceCrashLog(t)
	path := filepath.Join(t.TempDir(), "runs.db")
	interrupt(t, path)
	var wg sync.WaitGroup
	wg.Add(2)
	type outcome struct {
		res polyloop.RunResult
		err error
	}
	out := make(chan outcome, 2)
	for range 2 {
		s := open(t, path)
		store := readBarrier{Store: s, once: new(sync.Once), wg: &wg}
		go func() {
			w := crashWorkload(nil)
			res, err := w.Runner(store).Resume(context.Background(), crashRun, w.Agent())
			out <- outcome{res, err}
		}()
	}
	a, b := <-out, <-out
	if (a.err == nil) == (b.err == nil) {
		t.Fatalf("resumes returned %v and %v: want exactly one to proceed", a.err, b.err)
	}
	win, lose := a, b
	if a.err != nil {
		win, lose = b, a
	}
	if err := crashWorkload(nil).Check(win.res); err != nil {
		t.Fatal(err)
	}
	var pe *polyloop.PersistenceError
	if !errors.As(lose.err, &pe) || !errors.Is(lose.err, polyloop.ErrSeqConflict) {
		t.Fatalf("losing resume: %v, want ErrSeqConflict inside a *PersistenceError", lose.err)
	}
	checkFinishedLike(t, path, ref)
}

// interrupt runs workload W on path and cancels it during its third action.
func interrupt(t *testing.T, path string) {
	t.Helper()
	s, err := sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := crashWorkload(nil)
	w.Executor = &cancelAt{n: 3, cancel: cancel}
	_, err = w.Runner(s).Run(ctx, crashRun, w.Agent(), w.Task())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v, want context.Canceled", err)
	}
	l, err := polyloop.ReadLog(context.Background(), s, crashRun)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := polyloop.PlanResume(l)
	if err != nil || plan.Action != polyloop.PlanReplayAction {
		t.Fatalf("interrupted log: plan %+v, %v; want a replay of the third action", plan, err)
	}
}
