package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/workload"
)

// Commits reports a store's commit count (its Stats().Commits).
type Commits func() int64

// OpenBench opens a fresh store for a benchmark of runs concurrent runs (0:
// one run at a time), with its commit count. It registers its own cleanup
// with b.
type OpenBench func(b *testing.B, runs int) (polyloop.Store, Commits)

// BenchAppend measures the store alone: each op is one acting step of
// workload W, written as the runner writes it (two Appends of realistic
// records), on one run and spread over 64 concurrent runs. It reports
// commits/op.
func BenchAppend(b *testing.B, open OpenBench) {
	for _, runs := range []int{1, 64} {
		b.Run(fmt.Sprintf("runs=%d", runs), func(b *testing.B) {
			s, commits := open(b, runs)
			benchAppend(b, s, commits, runs)
		})
	}
}

// BenchWorkloadW runs workload W (package bench/workload) with the runner:
// one run of S=1000 (ns/step, commits/step), and 1, 8 and 64 concurrent
// runs of S=50 (steps/s). A run of S has S+1 steps, and every per-step
// figure divides by S+1, as package bench does. Run with -benchtime=1x for
// one repetition of each.
func BenchWorkloadW(b *testing.B, open OpenBench) {
	b.Run("run=1/steps=1000", func(b *testing.B) {
		s, commits := open(b, 0)
		benchRunW(b, s, commits, 1000)
	})
	for _, runs := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("runs=%d/steps=50", runs), func(b *testing.B) {
			s, commits := open(b, runs)
			benchConcurrentW(b, s, commits, runs, 50)
		})
	}
}

// BenchResumeRead measures what a Resume costs before its first new call:
// each op reads the log of a run of 1000 acting steps (written as the
// runner writes workload W) and plans its resume.
func BenchResumeRead(b *testing.B, open OpenBench) {
	s, _ := open(b, 0)
	benchReadPlan(b, s, 1000)
}

// benchAppend: each op is one step of workload W, spread over runs runs.
func benchAppend(b *testing.B, s polyloop.Store, commits Commits, runs int) {
	ctx := context.Background()
	prefix := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	ids := make([]string, runs)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%d", prefix, i)
		if err := polyloop.AppendRecords(ctx, s, ids[i], Started(ids[i], "bench"), Intent(1, 1)); err != nil {
			b.Fatal(err)
		}
	}
	c0 := commits()
	b.ResetTimer()
	var wg sync.WaitGroup
	for i, id := range ids {
		n := b.N / runs
		if i < b.N%runs {
			n++
		}
		wg.Go(func() {
			if err := appendSteps(ctx, s, id, n); err != nil {
				b.Error(err)
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(commits()-c0)/float64(b.N), "commits/op")
}

// benchRunW: each op is one run of workload W of S=steps.
func benchRunW(b *testing.B, s polyloop.Store, commits Commits, steps int) {
	ctx := context.Background()
	w := workload.W{Steps: steps}
	r := w.Runner(s)
	prefix := fmt.Sprintf("w1-%d", time.Now().UnixNano())
	c0 := commits()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		if err := RunW(ctx, w, r, fmt.Sprintf("%s-%d", prefix, i)); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	n := float64(b.N * (steps + 1))
	b.ReportMetric(float64(elapsed.Nanoseconds())/n, "ns/step")
	b.ReportMetric(float64(commits()-c0)/n, "commits/step")
}

// benchConcurrentW: each op is runs concurrent runs of workload W of
// S=steps. The runs share one Runner (and model), as package bench's do.
func benchConcurrentW(b *testing.B, s polyloop.Store, commits Commits, runs, steps int) {
	ctx := context.Background()
	w := workload.W{Steps: steps}
	r := w.Runner(s)
	prefix := fmt.Sprintf("wc-%d", time.Now().UnixNano())
	c0 := commits()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		var wg sync.WaitGroup
		for j := range runs {
			wg.Go(func() {
				if err := RunW(ctx, w, r, fmt.Sprintf("%s-%d-%d", prefix, i, j)); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
	}
	elapsed := time.Since(start)
	b.StopTimer()
	n := float64(b.N * runs * (steps + 1))
	b.ReportMetric(n/elapsed.Seconds(), "steps/s")
	b.ReportMetric(float64(commits()-c0)/n, "commits/step")
}

// benchReadPlan: each op reads the log of a run of steps steps and plans
// its resume.
func benchReadPlan(b *testing.B, s polyloop.Store, steps int) {
	ctx := context.Background()
	run := fmt.Sprintf("resume-%d", time.Now().UnixNano())
	if err := WriteRun(ctx, s, run, steps); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		l, err := polyloop.ReadLog(ctx, s, run)
		if err != nil {
			b.Fatal(err)
		}
		plan, err := polyloop.PlanResume(l)
		if err != nil {
			b.Fatal(err)
		}
		if plan.Action != polyloop.PlanRetryModelCall || len(l.Records) != 2+4*steps {
			b.Fatalf("plan %s of %d records, want %s of %d", plan.Action, len(l.Records), polyloop.PlanRetryModelCall, 2+4*steps)
		}
	}
}
