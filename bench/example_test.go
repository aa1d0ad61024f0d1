package bench_test

import (
	"context"
	"fmt"

	"github.com/polyloop/polyloop/bench"
	"github.com/polyloop/polyloop/memstore"
)

// Workload W runs on any store: here three steps in memory. Another runtime
// is compared by running the same script (bench.ReplyText, bench.Note,
// bench.ToolResult) through it.
func ExampleWorkload() {
	w := bench.Workload{Steps: 3}
	res, err := w.Runner(memstore.New()).Run(context.Background(), "w", w.Agent(), w.Task())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.StopReason, res.Totals.Steps, res.Totals.Actions, res.Records)
	// Output: completed 4 3 17
}

// Run measures W; a program that calls it must call MaybeRunChild first in
// main, since some measurements run in a fresh child process. (Not run as a
// test: TestRunEndToEnd does that.)
func ExampleRun() {
	rep, err := bench.Run(context.Background(), bench.Options{
		Stores: []string{"memory"}, Steps: 10, ConcurrentSteps: 5, Concurrency: []int{1, 4}, Reps: 1,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range rep.Figures {
		if f.Measure == 1 && f.Steps == 10 {
			fmt.Printf("%s %s: %.1f %s\n", f.Store, f.Name, f.Median, f.Unit)
		}
	}
}
