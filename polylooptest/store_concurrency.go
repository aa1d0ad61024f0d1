package polylooptest

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/polyloop/polyloop"
)

// isolatedRunIDs differ by case, by a prefix, by SQL LIKE wildcards and by
// script: ids that trip stores keyed by collated or pattern-matched text.
var isolatedRunIDs = []string{"run", "Run", "run-1", "run-10", "run%", "run_", "run/1", "ran", "运行", "run\u00e9", "rune\u0301"}

func checkStoreIsolated(e *env, h StoreHarness) error {
	s := h.New(e.t)
	want := map[string][]polyloop.Record{}
	for round := range 3 {
		for i, id := range isolatedRunIDs {
			n := 1 + (i+round)%2
			recs := intents(int64(len(want[id])), n, id)
			if err := appendOK(e.ctx, s, id, recs...); err != nil {
				return retag(ruleRunsIsolated, err) // another run's records were counted
			}
			want[id] = append(want[id], recs...)
		}
	}
	for _, id := range isolatedRunIDs {
		if err := expectLog(e.ctx, s, id, want[id]); err != nil {
			return tag(ruleRunsIsolated, fmt.Errorf("runs are not isolated: %w", err))
		}
	}
	return nil
}

func checkStoreConcurrentRuns(e *env, h StoreHarness) error {
	s := h.New(e.t)
	const workers, appends = 8, 20
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			run := fmt.Sprintf("polylooptest-concurrent-%d", w)
			var all []polyloop.Record
			for i := range appends {
				recs := intents(int64(2*i), 2, run)
				if err := appendOK(e.ctx, s, run, recs...); err != nil {
					errs[w] = retag(ruleConcurrentUse, err)
					return
				}
				all = append(all, recs...)
			}
			errs[w] = retag(ruleConcurrentUse, expectLog(e.ctx, s, run, all))
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func checkStoreConcurrentWriters(e *env, h StoreHarness) error {
	s, run := h.New(e.t), "polylooptest-writers"
	const writers, rounds = 4, 10
	var log []polyloop.Record
	for range rounds {
		seq := int64(len(log))
		won, err := race(e.ctx, s, run, seq, writers)
		if err != nil {
			return err
		}
		log = append(log, won...)
		if err := expectLog(e.ctx, s, run, log); err != nil {
			return tag(ruleOneWriterWins, fmt.Errorf("after writers raced for seq %d: %w", seq, err))
		}
	}
	return nil
}

// race makes writers append their own record at seq at once, and checks
// that exactly one wins and the others get ErrSeqConflict. It returns the
// winner's records.
func race(ctx context.Context, s polyloop.Store, run string, seq int64, writers int) ([]polyloop.Record, error) {
	start := make(chan struct{})
	errs := make([]error, writers)
	batches := make([][]polyloop.Record, writers)
	var wg sync.WaitGroup
	for w := range writers {
		batches[w] = intents(seq, 1+w%2, fmt.Sprintf("writer-%d", w))
		wg.Go(func() {
			<-start
			errs[w] = s.Append(ctx, run, rowsOf(batches[w]))
		})
	}
	close(start)
	wg.Wait()
	var won []polyloop.Record
	winners := 0
	for w, err := range errs {
		switch {
		case err == nil:
			winners++
			won = batches[w]
		case !errors.Is(err, polyloop.ErrSeqConflict):
			return nil, broke(ruleOneWriterWins, "writer %d racing for seq %d got %q (%T); a losing writer must get polyloop.ErrSeqConflict", w, seq, err, err)
		}
	}
	if winners != 1 {
		return nil, broke(ruleOneWriterWins, "%d of %d writers racing for seq %d of one run succeeded; exactly one must (the sequence rule fences concurrent writers)", winners, writers, seq)
	}
	return won, nil
}

func checkStoreCancelled(e *env, h StoreHarness) error {
	s, run := h.New(e.t), "polylooptest-cancelled"
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	recs := intents(0, 3, "w")
	var want []polyloop.Record
	appendErr := s.Append(ctx, run, rowsOf(recs[:2]))
	switch {
	case appendErr == nil:
		want = recs[:2]
	case !errors.Is(appendErr, context.Canceled):
		return broke(ruleCancelAtomic, "Append with a cancelled context returned %q (%T), which is not errors.Is context.Canceled; a store that stops for its context must say so", appendErr, appendErr)
	}
	if err := expectLog(e.ctx, s, run, want); err != nil {
		return retag(ruleCancelAtomic, fmt.Errorf("after an Append with a cancelled context (error %v): %w", appendErr, err))
	}
	if _, err := s.ReadRows(ctx, run); err != nil && !errors.Is(err, context.Canceled) {
		return broke(ruleCancelAtomic, "ReadRows with a cancelled context returned %q (%T), which is not errors.Is context.Canceled", err, err)
	}
	next := intents(int64(len(want)), 1, "x")
	if err := appendOK(e.ctx, s, run, next...); err != nil {
		return retag(ruleCancelAtomic, fmt.Errorf("the store is unusable after a cancelled call: %w", err))
	}
	return retag(ruleCancelAtomic, expectLog(e.ctx, s, run, append(want, next...)))
}
