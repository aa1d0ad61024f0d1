package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// Commits reports a store's commit count (its Stats().Commits).
type Commits func() int64

// BenchAppend measures the store alone: each op is one acting step of
// workload W, written as the runner writes it (two Appends of realistic
// records), spread over runs concurrent runs. It reports commits/op.
func BenchAppend(b *testing.B, s polyloop.Store, commits Commits, runs int) {
	ctx := context.Background()
	prefix := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	ids := make([]string, runs)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%d", prefix, i)
		if err := s.Append(ctx, ids[i], Started(ids[i], "bench"), Intent(1, 1)); err != nil {
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
			seq := int64(2)
			for step := 1; step <= n; step++ {
				before, after := StepBatches(step, seq)
				if err := s.Append(ctx, id, before...); err != nil {
					b.Error(err)
					return
				}
				if err := s.Append(ctx, id, after...); err != nil {
					b.Error(err)
					return
				}
				seq += 4
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(commits()-c0)/float64(b.N), "commits/op")
}

// BenchRunW runs workload W with the runner: each op is one run of steps
// steps. It reports ns/step and commits/step.
func BenchRunW(b *testing.B, s polyloop.Store, commits Commits, steps int) {
	ctx := context.Background()
	w := Workload{Steps: steps}
	prefix := fmt.Sprintf("w1-%d", time.Now().UnixNano())
	c0 := commits()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		if err := w.Run(ctx, w.Runner(s), fmt.Sprintf("%s-%d", prefix, i)); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	n := float64(b.N * steps)
	b.ReportMetric(float64(elapsed.Nanoseconds())/n, "ns/step")
	b.ReportMetric(float64(commits()-c0)/n, "commits/step")
}

// BenchConcurrentW runs workload W with the runner: each op is runs
// concurrent runs of steps steps. It reports the aggregate steps/s and
// commits/step.
func BenchConcurrentW(b *testing.B, s polyloop.Store, commits Commits, runs, steps int) {
	ctx := context.Background()
	w := Workload{Steps: steps}
	prefix := fmt.Sprintf("wc-%d", time.Now().UnixNano())
	c0 := commits()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		var wg sync.WaitGroup
		for j := range runs {
			wg.Go(func() {
				if err := w.Run(ctx, w.Runner(s), fmt.Sprintf("%s-%d-%d", prefix, i, j)); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
	}
	elapsed := time.Since(start)
	b.StopTimer()
	n := float64(b.N * runs * steps)
	b.ReportMetric(n/elapsed.Seconds(), "steps/s")
	b.ReportMetric(float64(commits()-c0)/n, "commits/step")
}

// BenchReadPlan measures what a Resume costs before its first new call:
// each op reads the log of a run of steps acting steps (written as the
// runner writes workload W) and plans its resume.
func BenchReadPlan(b *testing.B, s polyloop.Store, steps int) {
	ctx := context.Background()
	run := fmt.Sprintf("resume-%d", time.Now().UnixNano())
	if err := WriteRun(ctx, s, run, steps); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		l, err := s.ReadLog(ctx, run)
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
