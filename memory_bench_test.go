package polyloop_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/bench"
	"github.com/polyloop/polyloop/memstore"
)

// BenchmarkLoopMemory measures the library's own time per step on workload
// W with memory: a view of 10 entries asked for and rendered before every
// model call ("view"), and, besides, a maintenance after every step that
// records one operation ("view+maintain"). Compare with BenchmarkLoop.
func BenchmarkLoopMemory(b *testing.B) {
	const steps = 1000
	v := newStepView()
	for i := range 10 {
		v.add(fmt.Sprint(i), viewEntry(i))
	}
	maint := &funcMaintainer{fn: func(ctx context.Context, s polyloop.MaintainedStep) error {
		_, err := polyloop.Perform(ctx, polyloop.Operation[int]{Name: "op", Do: func(context.Context) (int, error) { return 1, nil }})
		return err
	}}
	for _, tc := range []struct {
		name string
		mem  *polyloop.AgentMemory
	}{
		{"view", &polyloop.AgentMemory{View: v}},
		{"view+maintain", &polyloop.AgentMemory{View: v, Maintainer: maint}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			w := bench.Workload{Steps: steps}
			agent := w.Agent()
			agent.Memory = tc.mem
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				r := w.Runner(memstore.New())
				b.StartTimer()
				res, err := r.Run(context.Background(), "w", agent, w.Task())
				if err != nil || res.Totals.Steps != steps+1 {
					b.Fatal(res, err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(steps+1)), "ns/step")
		})
	}
}
