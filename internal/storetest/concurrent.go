package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/polyloop/polyloop"
)

// testConcurrentRuns has 64 goroutines append to 64 runs at once, each run
// written the way the runner writes it: two Appends per step.
func testConcurrentRuns(t *testing.T, ctx context.Context, s polyloop.Store) {
	const runs, steps = 64, 10
	prefix := runName(t, "c")
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for i := range runs {
		wg.Go(func() {
			run := fmt.Sprintf("%s-%d", prefix, i)
			if err := WriteRun(ctx, s, run, steps); err != nil {
				errs <- fmt.Errorf("run %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := range runs {
		run := fmt.Sprintf("%s-%d", prefix, i)
		SameLog(t, ReadAll(t, ctx, s, run), Prefix(run, 2+4*steps))
	}
}

// WriteRun writes RunStarted + ModelCallIntent and then steps acting steps
// of workload W to run, two Appends per step.
func WriteRun(ctx context.Context, s polyloop.Store, run string, steps int) error {
	if err := s.Append(ctx, run, Started(run, "prefix"), Intent(1, 1)); err != nil {
		return err
	}
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

// testConcurrentWriters has several writers race for each seq of one run:
// exactly one wins each round, the others get ErrSeqConflict.
func testConcurrentWriters(t *testing.T, ctx context.Context, s polyloop.Store) {
	const writers, rounds = 8, 10
	run := runName(t, "race")
	log := Prefix(run, 2*rounds)
	for round := range rounds {
		batch := log[2*round : 2*round+2]
		var wins, conflicts atomic.Int32
		var wg sync.WaitGroup
		for range writers {
			wg.Go(func() {
				err := s.Append(ctx, run, batch...)
				switch {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, polyloop.ErrSeqConflict):
					conflicts.Add(1)
				default:
					t.Errorf("round %d: Append: %v, want nil or ErrSeqConflict", round, err)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 || conflicts.Load() != writers-1 {
			t.Fatalf("round %d: %d writers won and %d conflicted, want 1 and %d", round, wins.Load(), conflicts.Load(), writers-1)
		}
	}
	SameLog(t, ReadAll(t, ctx, s, run), log)
}
