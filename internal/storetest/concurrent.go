package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/polyloop/polyloop"
)

// WriteRun writes RunStarted + ModelCallIntent and then steps acting steps
// of workload W to run, two Appends per step.
func WriteRun(ctx context.Context, s polyloop.Store, run string, steps int) error {
	if err := s.Append(ctx, run, Started(run, "prefix"), Intent(1, 1)); err != nil {
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
		if err := s.Append(ctx, run, before...); err != nil {
			return err
		}
		if err := s.Append(ctx, run, after...); err != nil {
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
			go func() { errs <- s.Append(ctx, run, log[i:i+2]...) }()
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
