package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/polyloop/polyloop"
)

// concSample is what one repetition of c concurrent runs measured.
type concSample struct {
	elapsed time.Duration
	steps   int   // StepCompleted records of all runs
	commits int64 // -1 when not counted
}

func (s concSample) stepsPerSecond() float64 { return float64(s.steps) / s.elapsed.Seconds() }

// pgConns is the pool size for c concurrent runs on PostgreSQL: a
// connection per run, as a service running that many runs would configure,
// bounded well below the server's default max_connections of 100.
func pgConns(c int) int32 { return int32(min(max(c, 4), 64)) }

// concurrentRuns starts c runs of W with steps steps on one fresh store at
// once and measures the wall time until the last one finishes.
func concurrentRuns(ctx context.Context, spec storeSpec, dir string, c, steps int) (s concSample, err error) {
	loc := spec.newLoc(dir, pgConns(c))
	defer func() { err = errors.Join(err, loc.remove(context.WithoutCancel(ctx))) }()
	st, err := loc.open(ctx)
	if err != nil {
		return s, err
	}
	defer func() { err = errors.Join(err, st.close()) }()
	c0 := st.commitCount()
	s.elapsed, s.steps, err = runConcurrently(ctx, st.Store, Workload{Steps: steps}, c)
	s.commits = -1
	if c0 >= 0 {
		s.commits = st.commitCount() - c0
	}
	return s, err
}

// runConcurrently runs c runs of w on st, all started together, and returns
// the wall time and the steps done. The runs share one model client and one
// Runner, as runs in one service would.
func runConcurrently(ctx context.Context, st polyloop.Store, w Workload, c int) (time.Duration, int, error) {
	r := w.Runner(st)
	agent, task := w.Agent(), w.Task()
	start := make(chan struct{})
	results := make([]polyloop.RunResult, c)
	errs := make([]error, c)
	var wg sync.WaitGroup
	for i := range c {
		id := fmt.Sprintf("w%03d", i)
		wg.Go(func() {
			<-start
			results[i], errs[i] = r.Run(ctx, id, agent, task)
		})
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	elapsed := time.Since(t0)
	steps := 0
	for i := range c {
		if errs[i] == nil {
			errs[i] = w.Check(results[i])
		}
		steps += results[i].Totals.Steps
	}
	return elapsed, steps, errors.Join(errs...)
}

// measureConcurrency gives the figures of measurement 3 for one store:
// aggregate steps per second and commits per step at each concurrency.
func measureConcurrency(ctx context.Context, o Options, spec storeSpec, name, dir string) ([]Figure, error) {
	var figs []Figure
	for _, c := range o.Concurrency {
		var rates, commits []float64
		for i := range o.Reps {
			s, err := concurrentRuns(ctx, spec, dir, c, o.ConcurrentSteps)
			if err != nil {
				return nil, fmt.Errorf("bench: %s, %d concurrent runs: %w", name, c, err)
			}
			o.progress("%s: %d concurrent runs of S=%d, repetition %d/%d: %.0f steps/s", name, c,
				o.ConcurrentSteps, i+1, o.Reps, s.stepsPerSecond())
			rates = append(rates, s.stepsPerSecond())
			if s.commits >= 0 {
				commits = append(commits, float64(s.commits)/float64(s.steps))
			}
		}
		base := Figure{Measure: 3, Store: name, Steps: o.ConcurrentSteps, Runs: c}
		f := base.named("steps_per_second", "aggregate steps per second", "steps/s").summarize(rates)
		if g, ok := concurrencyGoal(spec); ok {
			f = concurrencyTargetsAt(c, o.ConcurrentSteps).apply(f, g)
		}
		figs = append(figs, f)
		if len(commits) > 0 {
			figs = append(figs, base.named("commits_per_step", "commits per step", "commits").summarize(commits))
		}
	}
	return figs, nil
}
