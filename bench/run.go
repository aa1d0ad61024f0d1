package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// Run measures workload W on each store of opts and returns the report.
// It takes minutes at the default sizes: Progress, when set, follows it.
// A measurement that fails ends Run with its error; cancelling ctx stops it
// (children included) with ctx's error. The process must call MaybeRunChild
// at the start of main: Run starts children from this executable.
func Run(ctx context.Context, opts Options) (*Report, error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(o.TempDir, "polyloop-bench-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer os.RemoveAll(dir)
	exe, err := copyExecutable(dir)
	if err != nil {
		return nil, err
	}
	ctx = withChildExe(ctx, exe)
	rep := &Report{
		Machine:    currentMachine(),
		Executable: currentExecutable(),
		Workload:   workloadDescription,
		Steps:      o.Steps, ConcurrentSteps: o.ConcurrentSteps, Concurrency: o.Concurrency, Reps: o.Reps,
		Started: time.Now(),
		Notes:   standardNotes(o),
	}
	idle, err := rssFigures(ctx, o, storeSpec{kind: kindMemory}, "-", dir, childTask{Mode: modeIdle})
	switch {
	case errors.Is(err, errRSSUnknown):
		rep.Notes = append(rep.Notes, "peak RSS is not measured: this platform has no /proc/self/status VmHWM")
	case err != nil:
		return nil, err
	default:
		rep.Figures = append(rep.Figures, idle...)
	}
	for _, s := range o.Stores {
		spec, _ := parseStore(s) // validated
		if err := measureStore(ctx, o, spec, dir, rep); err != nil {
			return nil, err
		}
	}
	rep.Machine.LoadEnd = loadAvg()
	rep.Elapsed = time.Since(rep.Started)
	return rep, nil
}

// measureStore runs every measurement on one store and adds its figures.
func measureStore(ctx context.Context, o Options, spec storeSpec, dir string, rep *Report) error {
	info, err := describeStore(ctx, spec, dir)
	if err != nil {
		return err
	}
	rep.Stores = append(rep.Stores, info)
	name := info.Name
	floor, err := measureFloor(ctx, o, spec, name, dir)
	if err != nil {
		return err
	}
	if floor.N > 0 {
		rep.Figures = append(rep.Figures, floor)
	}
	steps := []int{o.Steps}
	if !spec.durable() && o.Steps >= 10 {
		steps = append(steps, o.Steps/10) // in memory, cheap: shows whether time per step is flat in S
	}
	for _, s := range steps {
		figs, err := measureSingle(ctx, o, spec, name, dir, s, floor.Median)
		if err != nil {
			return err
		}
		rep.Figures = append(rep.Figures, figs...)
	}
	for _, m := range []func(context.Context, Options, storeSpec, string, string) ([]Figure, error){
		measureConcurrency, measureResume,
	} {
		figs, err := m(ctx, o, spec, name, dir)
		if err != nil {
			return err
		}
		rep.Figures = append(rep.Figures, figs...)
	}
	figs, err := measureRSS(ctx, o, spec, name, dir)
	if errors.Is(err, errRSSUnknown) {
		return nil
	}
	rep.Figures = append(rep.Figures, figs...)
	return err
}

// measureFloor measures the floor under one durable commit of a store: the
// fsync of the SQLite file's file system, the commit round trip of the
// PostgreSQL server. The memory store has none (a zero Figure).
func measureFloor(ctx context.Context, o Options, spec storeSpec, name, dir string) (Figure, error) {
	switch spec.kind {
	case kindSQLite:
		return measureFsync(ctx, o, name, dir)
	case kindPostgres:
		return measureCommitFloor(ctx, o, spec, name, dir)
	}
	return Figure{}, nil
}

// describeStore names a store and its settings.
func describeStore(ctx context.Context, spec storeSpec, dir string) (StoreInfo, error) {
	switch spec.kind {
	case kindSQLite:
		fs := filesystemOf(dir)
		if fs != "" {
			fs = " (" + fs + ")"
		}
		return StoreInfo{Name: kindSQLite, Settings: "sqlitestore (modernc.org/sqlite, pure Go): WAL, synchronous=FULL, " +
			"group commit (the caller of an Append leads its batch, MaxBatch 256); a fresh file per measurement in " + dir + fs}, nil
	case kindPostgres:
		s, err := pgSettings(ctx, spec.dsn)
		if err != nil {
			return StoreInfo{}, err
		}
		return StoreInfo{Name: kindPostgres, Settings: s + "; a fresh schema per measurement, dropped after; " +
			"pool of max(4, C) connections (64 at most) for C concurrent runs"}, nil
	}
	return StoreInfo{Name: kindMemory, Settings: "memstore: in process, not durable"}, nil
}
