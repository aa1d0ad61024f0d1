package faultcampaign

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"sync"

	"github.com/polyloop/polyloop"
)

// Result is one plan performed and checked against its log.
type Result struct {
	Plan     Plan
	Expected Expected
	Outcome  Outcome
}

// Perform runs every plan on st, with workers runs at a time (SQLite
// stores share their fsyncs between concurrent runs), calling progress
// after each (it may be nil).
func Perform(ctx context.Context, st polyloop.Store, plans []Plan, workers int, progress func(done int)) []Result {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	results := make([]Result, len(plans))
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for range workers {
		wg.Go(func() {
			for i := range next {
				results[i] = Result{Plan: plans[i], Expected: Expect(plans[i]), Outcome: Run(ctx, st, plans[i])}
				if progress != nil {
					mu.Lock()
					done++
					progress(done)
					mu.Unlock()
				}
			}
		})
	}
	for i := range plans {
		next <- i
	}
	close(next)
	wg.Wait()
	return results
}

// CheckLog compares a performed plan with its log, field by field: the
// run finished or not as expected, with the expected stop reason; the
// RunFinished totals (or, unfinished, the totals ComputeTotals gives) are
// the expected ones; the last invocation's result says the same; the
// invocations' errors are those of the fault.
func CheckLog(ctx context.Context, st polyloop.Store, r Result) error {
	log, err := polyloop.ReadLog(ctx, st, r.Plan.RunID)
	if err != nil {
		return err
	}
	log.RunID = r.Plan.RunID
	want := r.Expected
	fin := log.Finished()
	if (fin != nil) != want.Finished {
		return fmt.Errorf("finished %v, want %v", fin != nil, want.Finished)
	}
	got := polyloop.ComputeTotals(log)
	if fin != nil {
		if fin.StopReason != want.StopReason {
			return fmt.Errorf("stop reason %s, want %s", fin.StopReason, want.StopReason)
		}
		got = fin.Totals
	}
	if err := SameTotals(got, want.Totals); err != nil {
		return fmt.Errorf("totals of the log: %w", err)
	}
	if res := r.Outcome.Result; res != nil {
		if res.StopReason != want.StopReason {
			return fmt.Errorf("the result's stop reason %s, want %s", res.StopReason, want.StopReason)
		}
		if err := SameTotals(res.Totals, want.Totals); err != nil {
			return fmt.Errorf("the result's totals: %w", err)
		}
	}
	return CheckErrors(r.Plan, r.Outcome, want.Fired)
}

// SameTotals names each field in which two totals differ.
func SameTotals(got, want polyloop.Totals) error {
	if got == want {
		return nil
	}
	var diffs []string
	gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
	for i := range gv.NumField() {
		if !reflect.DeepEqual(gv.Field(i).Interface(), wv.Field(i).Interface()) {
			diffs = append(diffs, fmt.Sprintf("%s %v, want %v", gv.Type().Field(i).Name, gv.Field(i).Interface(), wv.Field(i).Interface()))
		}
	}
	return fmt.Errorf("%v", diffs)
}
