package polyloop_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/polyloop/polyloop/bench"
	"github.com/polyloop/polyloop/memstore"
)

// BenchmarkLoop measures the library's own time per step on workload W
// (package bench defines it) with the in-memory store: the ns/step metric,
// and allocs/op over the run's steps.
func BenchmarkLoop(b *testing.B) {
	for _, steps := range []int{100, 1000} {
		b.Run(fmt.Sprintf("S=%d", steps), func(b *testing.B) {
			w := bench.Workload{Steps: steps}
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				r := w.Runner(memstore.New())
				b.StartTimer()
				res, err := r.Run(context.Background(), "w", w.Agent(), w.Task())
				if err != nil || res.Totals.Steps != steps+1 {
					b.Fatal(res, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(steps+1)), "ns/step")
		})
	}
}
