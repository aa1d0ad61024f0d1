package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/polyloop/polyloop"
)

// WriteRun writes RunStarted + ModelCallIntent and then steps acting steps
// of workload W to run, two Appends per step.
func WriteRun(ctx context.Context, s polyloop.Store, run string, steps int) error {
	if err := polyloop.AppendRecords(ctx, s, run, Started(run, "prefix"), Intent(1, 1)); err != nil {
		return err
	}
	return appendSteps(ctx, s, run, steps)
}

// appendSteps appends steps acting steps of workload W to run, whose log
// holds RunStarted and the first ModelCallIntent: two Appends per step, as
// the runner writes them.
func appendSteps(ctx context.Context, s polyloop.Store, run string, steps int) error {
	seq := int64(2)
	for step := 1; step <= steps; step++ {
		before, after := StepBatches(step, seq)
		if err := polyloop.AppendRecords(ctx, s, run, before...); err != nil {
			return err
		}
		if err := polyloop.AppendRecords(ctx, s, run, after...); err != nil {
			return err
		}
		seq += 4
	}
	return nil
}

// Fence has two handles on one storage (two Stores on one file or
// database) race to append each pair of records of log to run: exactly one
// must win each time, the other getting ErrSeqConflict. Both must then
// read log back.
func Fence(t testing.TB, ctx context.Context, a, b polyloop.Store, run string, log []polyloop.Record) {
	t.Helper()
	for i := 0; i+2 <= len(log); i += 2 {
		errs := make(chan error, 2)
		for _, s := range []polyloop.Store{a, b} {
			go func() { errs <- polyloop.AppendRecords(ctx, s, run, log[i:i+2]...) }()
		}
		e1, e2 := <-errs, <-errs
		if (e1 == nil) == (e2 == nil) {
			t.Fatalf("seq %d: errors %v and %v, want exactly one nil", i, e1, e2)
		}
		if e := errors.Join(e1, e2); !errors.Is(e, polyloop.ErrSeqConflict) {
			t.Fatalf("seq %d: loser got %v, want ErrSeqConflict", i, e)
		}
	}
	SameLog(t, ReadAll(t, ctx, a, run), log)
	SameLog(t, ReadAll(t, ctx, b, run), log)
}

// ConcurrentRuns has runs goroutines write a run each to s at once —
// RunStarted and steps acting steps, two Appends per step, as WriteRun does
// — then replay the run's first Append as a stale writer would, which must
// fail with ErrSeqConflict. Every run must then read back whole. Run it
// with -race. Run ids start with prefix.
func ConcurrentRuns(t testing.TB, ctx context.Context, s polyloop.Store, prefix string, runs, steps int) {
	t.Helper()
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			run := fmt.Sprintf("%s-%d", prefix, i)
			if err := WriteRun(ctx, s, run, steps); err != nil {
				t.Errorf("%s: %v", run, err)
				return
			}
			if err := polyloop.AppendRecords(ctx, s, run, Prefix(run, 2)...); !errors.Is(err, polyloop.ErrSeqConflict) {
				t.Errorf("%s: stale Append: %v, want ErrSeqConflict", run, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for i := range runs {
		run := fmt.Sprintf("%s-%d", prefix, i)
		SameLog(t, ReadAll(t, ctx, s, run), Prefix(run, 2+4*steps))
	}
}
