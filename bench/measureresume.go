package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/polyloop/polyloop/memstore"
)

// resumeSample is what one repetition of the resume measurement measured.
type resumeSample struct {
	startToCall, entryToCall time.Duration // fresh process only
	open, read, plan         time.Duration
}

// measureResume gives the figures of measurement 4 for one store. On a
// durable store, Reps runs of W are stopped before their final model call;
// for each, one fresh process opens the store, reads the log and plans, and
// another resumes it to its first new model call. The memory store cannot
// outlive a process, so its resume is measured in process.
func measureResume(ctx context.Context, o Options, spec storeSpec, name, dir string) (figs []Figure, err error) {
	w := Workload{Steps: o.Steps}
	if !spec.durable() {
		return measureResumeInProcess(ctx, o, name, w)
	}
	loc := spec.newLoc(dir, 0)
	defer func() { err = errors.Join(err, loc.remove(context.WithoutCancel(ctx))) }()
	o.progress("%s: writing %d runs of S=%d stopped before their final call", name, o.Reps, o.Steps)
	ids, err := prepareOn(ctx, loc, w, o.Reps)
	if err != nil {
		return nil, fmt.Errorf("bench: %s resume: %w", name, err)
	}
	var samples []resumeSample
	for i, id := range ids {
		s, err := resumeInChildren(ctx, loc, w, id)
		if err != nil {
			return nil, fmt.Errorf("bench: %s resume: %w", name, err)
		}
		o.progress("%s: resume of a stopped run S=%d, repetition %d/%d: %.1f ms from process start to the first new call",
			name, o.Steps, i+1, o.Reps, millis(s.startToCall))
		samples = append(samples, s)
	}
	return resumeFigures(o, name, samples, true), nil
}

// prepareOn writes n stopped runs of w to the store at loc and closes it, so
// that the children are the only ones holding it.
func prepareOn(ctx context.Context, loc storeLoc, w Workload, n int) (ids []string, err error) {
	st, err := loc.open(ctx)
	if err != nil {
		return nil, err
	}
	ids, err = prepareStopped(ctx, st.Store, w, n)
	return ids, errors.Join(err, st.close())
}

func resumeInChildren(ctx context.Context, loc storeLoc, w Workload, id string) (resumeSample, error) {
	p, err := startChild(ctx, childTask{Mode: modePlan, Store: loc, RunID: id})
	if err != nil {
		return resumeSample{}, err
	}
	if int64(p.Records) != w.RecordsPerRun()-3 {
		return resumeSample{}, fmt.Errorf("stopped run %s has %d records, want %d", id, p.Records, w.RecordsPerRun()-3)
	}
	r, err := startChild(ctx, childTask{Mode: modeResume, Store: loc, RunID: id, Steps: w.Steps})
	if err != nil {
		return resumeSample{}, err
	}
	return resumeSample{startToCall: r.StartToCall, entryToCall: r.EntryToCall, open: p.Open, read: p.Read, plan: p.Plan}, nil
}

func measureResumeInProcess(ctx context.Context, o Options, name string, w Workload) ([]Figure, error) {
	st := memstore.New()
	ids, err := prepareStopped(ctx, st, w, o.Reps)
	if err != nil {
		return nil, fmt.Errorf("bench: %s resume: %w", name, err)
	}
	var samples []resumeSample
	for _, id := range ids {
		var s resumeSample
		if s.read, s.plan, _, err = readAndPlan(ctx, st, id); err != nil {
			return nil, fmt.Errorf("bench: %s resume: %w", name, err)
		}
		t0 := time.Now()
		at, err := resumeToFirstCall(ctx, st, w, id)
		if err != nil {
			return nil, fmt.Errorf("bench: %s resume: %w", name, err)
		}
		s.entryToCall = at.Sub(t0)
		samples = append(samples, s)
	}
	return resumeFigures(o, name, samples, false), nil
}

func resumeFigures(o Options, name string, samples []resumeSample, fresh bool) []Figure {
	base := Figure{Measure: 4, Store: name, Steps: o.Steps, Runs: 1}
	ms := func(f func(resumeSample) time.Duration) []float64 {
		return collect(samples, func(s resumeSample) float64 { return millis(f(s)) })
	}
	entry := ms(func(s resumeSample) time.Duration { return s.entryToCall })
	readPlan := ms(func(s resumeSample) time.Duration { return s.read + s.plan })
	plan := ms(func(s resumeSample) time.Duration { return s.plan })
	if !fresh {
		return []Figure{
			base.named("resume_entry_to_call", "resume: Resume call → first new call (in process)", "ms").summarize(entry),
			base.named("resume_read_plan", "resume: log read + plan", "ms").summarize(readPlan),
			base.named("resume_plan", "resume: plan alone", "ms").summarize(plan),
		}
	}
	start := base.named("resume_start_to_call", "resume: process start → first new call", "ms").
		summarize(ms(func(s resumeSample) time.Duration { return s.startToCall }))
	return []Figure{
		targetsAt(o.Steps).apply(start, goalResume),
		base.named("resume_entry_to_call", "resume: main entry → first new call", "ms").summarize(entry),
		base.named("resume_open", "resume: store open (fresh process)", "ms").
			summarize(ms(func(s resumeSample) time.Duration { return s.open })),
		base.named("resume_read_plan", "resume: log read + plan (fresh process)", "ms").summarize(readPlan),
		base.named("resume_plan", "resume: plan alone", "ms").summarize(plan),
	}
}

func millis(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
