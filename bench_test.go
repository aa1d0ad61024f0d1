package polyloop_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/polyloop/polyloop/bench"
	"github.com/polyloop/polyloop/memstore"
)

// BenchmarkLoop measures the library's own time per step on workload W
// (package bench defines it) with the in-memory store: ns/step and
// allocs/step.
func BenchmarkLoop(b *testing.B) {
	for _, steps := range []int{100, 1000} {
		b.Run(fmt.Sprintf("S=%d", steps), func(b *testing.B) {
			w := bench.Workload{Steps: steps}
			b.ReportAllocs()
			var mallocs uint64
			var m0, m1 runtime.MemStats
			for b.Loop() {
				b.StopTimer()
				r := w.Runner(memstore.New())
				runtime.ReadMemStats(&m0)
				b.StartTimer()
				res, err := r.Run(context.Background(), "w", w.Agent(), w.Task())
				b.StopTimer()
				runtime.ReadMemStats(&m1)
				mallocs += m1.Mallocs - m0.Mallocs
				if err != nil || res.Totals.Steps != steps+1 {
					b.Fatal(res, err)
				}
				b.StartTimer()
			}
			perStep := float64(b.N * (steps + 1))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/perStep, "ns/step")
			b.ReportMetric(float64(mallocs)/perStep, "allocs/step")
		})
	}
}
