package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/polyloop/polyloop"
)

// runSample is what one repetition of a single run measured.
type runSample struct {
	elapsed     time.Duration
	steps       int   // StepCompleted records: S+1
	mallocs     int64 // heap allocations during the run, all goroutines
	commits     int64 // write transactions during the run; -1 when not counted
	recordBytes int64 // the run's records as the stores are handed them (their rows' Data)
	jsonBytes   int64 // the run's records as JSON lines (EncodeRecords)
	diskBytes   int64 // the store's size after the run; -1 when unknown
}

// singleRun runs W once with steps steps on a fresh store and measures it.
func singleRun(ctx context.Context, spec storeSpec, dir string, steps int) (s runSample, err error) {
	loc := spec.newLoc(dir, 0)
	defer func() { err = errors.Join(err, loc.remove(context.WithoutCancel(ctx))) }()
	st, err := loc.open(ctx)
	if err != nil {
		return s, err
	}
	s, err = timedRun(ctx, st, Workload{Steps: steps})
	if err != nil {
		return s, errors.Join(err, st.close())
	}
	log, err := polyloop.ReadLog(ctx, st, "w")
	if err != nil {
		return s, errors.Join(err, st.close())
	}
	if s.recordBytes, s.jsonBytes, err = encodedSizes(ctx, log); err != nil {
		return s, errors.Join(err, st.close())
	}
	if err := st.close(); err != nil {
		return s, err
	}
	n, ok, err := loc.diskBytes(ctx)
	s.diskBytes = -1
	if ok {
		s.diskBytes = n
	}
	return s, err
}

// encodedSizes gives the size of a log's records as the Runner hands them
// to a store that keeps bytes (the Data of their rows) and as JSON lines.
func encodedSizes(ctx context.Context, log polyloop.RunLog) (records, jsonLines int64, err error) {
	var sizes rowBytes
	if err := polyloop.AppendRecords(ctx, &sizes, log.RunID, log.Records...); err != nil {
		return 0, 0, err
	}
	enc, err := polyloop.EncodeRecords(log.Records)
	return sizes.n, int64(len(enc)), err
}

// rowBytes is a store that keeps nothing but the size of the rows' data it
// is handed.
type rowBytes struct{ n int64 }

func (s *rowBytes) Append(_ context.Context, _ string, rows []polyloop.Row) error {
	for _, r := range rows {
		s.n += int64(len(r.Data))
	}
	return nil
}

func (*rowBytes) ReadRows(context.Context, string) ([]polyloop.Row, error) { return nil, nil }

func (*rowBytes) ReadRowsFrom(context.Context, string, int64, int) ([]polyloop.Row, error) {
	return nil, nil
}

// timedRun runs W as run "w" on st, timing it and counting allocations and
// commits.
func timedRun(ctx context.Context, st *openStore, w Workload) (runSample, error) {
	r := w.Runner(st.Store) // the store itself: a wrapper would hide what it implements (RecordKeeper)
	agent, task := w.Agent(), w.Task()
	s := runSample{commits: -1}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	c0 := st.commitCount()
	t0 := time.Now()
	res, err := r.Run(ctx, "w", agent, task)
	s.elapsed = time.Since(t0)
	runtime.ReadMemStats(&m1)
	if err != nil {
		return s, err
	}
	if err := w.Check(res); err != nil {
		return s, err
	}
	s.steps = res.Totals.Steps
	s.mallocs = int64(m1.Mallocs - m0.Mallocs)
	if c0 >= 0 {
		s.commits = st.commitCount() - c0
	}
	return s, nil
}

func (s *openStore) commitCount() int64 {
	if s.commits == nil {
		return -1
	}
	return s.commits()
}

// measureSingle gives the figures of measurements 1 and 2 for one store (and
// the bytes of measurement 5): time, allocations and commits per step, the
// ratio of time per step to two floors (floorMicros: one durable commit's
// floor, 0 for the memory store), bytes stored per step.
func measureSingle(ctx context.Context, o Options, spec storeSpec, name, dir string, steps int, floorMicros float64) ([]Figure, error) {
	var samples []runSample
	for i := range o.Reps {
		s, err := singleRun(ctx, spec, dir, steps)
		if err != nil {
			return nil, fmt.Errorf("bench: %s single run S=%d: %w", name, steps, err)
		}
		o.progress("%s: single run S=%d, repetition %d/%d: %.1f µs/step", name, steps, i+1, o.Reps,
			perStepMicros(s))
		samples = append(samples, s)
	}
	return singleFigures(spec, name, steps, samples, floorMicros), nil
}

func perStepMicros(s runSample) float64 {
	return float64(s.elapsed.Nanoseconds()) / 1e3 / float64(s.steps)
}

func singleFigures(spec storeSpec, name string, steps int, samples []runSample, floorMicros float64) []Figure {
	measure := 1
	if spec.durable() {
		measure = 2
	}
	t := targetsAt(steps)
	base := Figure{Measure: measure, Store: name, Steps: steps, Runs: 1}
	timeFig := base.named("time_per_step", "time per step", "µs").summarize(collect(samples, perStepMicros))
	if !spec.durable() {
		timeFig = t.apply(timeFig, goalMemoryTime)
	}
	figs := []Figure{
		timeFig,
		base.named("allocs_per_step", "allocations per step", "allocs").
			summarize(collect(samples, func(s runSample) float64 { return float64(s.mallocs) / float64(s.steps) })),
	}
	if floorMicros > 0 {
		f := base.named("floor_ratio", "time per step ÷ (2 × floor)", "×").
			summarize(collect(samples, func(s runSample) float64 { return perStepMicros(s) / (2 * floorMicros) }))
		figs = append(figs, t.apply(f, goalFloorRatio))
	}
	if samples[0].commits >= 0 {
		f := base.named("commits_per_step", "commits per step", "commits").
			summarize(collect(samples, func(s runSample) float64 { return float64(s.commits) / float64(s.steps) }))
		figs = append(figs, t.apply(f, goalCommits))
	}
	return append(figs, bytesFigures(t, base, samples)...)
}

// bytesFigures are the bytes stored per step (measurement 5): the encoded
// records (what every store is handed: their rows), the records as JSON lines
// (the export form) and the store's own size.
func bytesFigures(t figureTargets, base Figure, samples []runSample) []Figure {
	base.Measure = 5
	perStep := func(bytes func(runSample) int64) []float64 {
		return collect(samples, func(s runSample) float64 { return float64(bytes(s)) / float64(s.steps) })
	}
	rec := base.named("record_bytes_per_step", "encoded records per step", "bytes").
		summarize(perStep(func(s runSample) int64 { return s.recordBytes }))
	figs := []Figure{
		t.apply(rec, goalBytes),
		base.named("json_bytes_per_step", "records as JSON lines per step", "bytes").
			summarize(perStep(func(s runSample) int64 { return s.jsonBytes })),
	}
	if samples[0].diskBytes >= 0 {
		figs = append(figs, base.named("disk_bytes_per_step", "store size per step", "bytes").
			summarize(perStep(func(s runSample) int64 { return s.diskBytes })))
	}
	return figs
}

// collect maps samples to the values of one figure.
func collect[T any](samples []T, f func(T) float64) []float64 {
	xs := make([]float64, len(samples))
	for i, s := range samples {
		xs[i] = f(s)
	}
	return xs
}

func (f Figure) named(id, name, unit string) Figure {
	f.ID, f.Name, f.Unit = id, name, unit
	return f
}
