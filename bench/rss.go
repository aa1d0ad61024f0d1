package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// rssIn runs a child doing t on a fresh store and returns its peak RSS
// (and its anonymous and file-backed resident memory at the end) in MB
// (10⁶ bytes, the unit of the target).
func rssIn(ctx context.Context, spec storeSpec, dir string, t childTask) (mb, anon, file float64, err error) {
	t.Store = spec.newLoc(dir, pgConns(t.Runs))
	defer func() { err = errors.Join(err, t.Store.remove(context.WithoutCancel(ctx))) }()
	res, err := startChild(ctx, t)
	if err != nil {
		return 0, 0, 0, err
	}
	if t.Mode != modeIdle && res.Steps != max(t.Runs, 1)*(t.Steps+1) {
		return 0, 0, 0, fmt.Errorf("bench: child %s did %d steps, want %d", t.Mode, res.Steps, max(t.Runs, 1)*(t.Steps+1))
	}
	if res.PeakRSSKB == 0 {
		return 0, 0, 0, errRSSUnknown
	}
	return kibToMB(res.PeakRSSKB), kibToMB(res.AnonKB), kibToMB(res.FileKB), nil
}

// kibToMB converts KiB, the unit of /proc/self/status, to MB (10⁶ bytes).
func kibToMB(kib int64) float64 { return float64(kib) * 1024 / 1e6 }

// errRSSUnknown: the platform does not report a process's peak RSS
// (/proc/self/status has no VmHWM).
var errRSSUnknown = errors.New("bench: peak RSS is not available on this platform")

// measureRSS gives the peak-RSS figures of measurement 5 for one store: a
// single run of S steps, as `polyloop run` makes (the goal's figure: the
// child is this executable, so `polyloop bench` measures the polyloop
// binary), and the largest concurrency of measurement 3. Each repetition is
// its own child process.
func measureRSS(ctx context.Context, o Options, spec storeSpec, name, dir string) ([]Figure, error) {
	tasks := []childTask{{Mode: modeRSSSingle, Steps: o.Steps}}
	if len(o.Concurrency) > 0 {
		c := slices.Max(o.Concurrency)
		tasks = append(tasks, childTask{Mode: modeRSSConcurrent, Steps: o.ConcurrentSteps, Runs: c})
	}
	var figs []Figure
	for _, t := range tasks {
		fs, err := rssFigures(ctx, o, spec, name, dir, t)
		if err != nil {
			return figs, err
		}
		if t.Mode == modeRSSSingle {
			fs[0] = targetsAt(t.Steps).apply(fs[0], goalPeakRSS)
		}
		figs = append(figs, fs...)
	}
	return figs, nil
}

// rssFigures measures a child doing t: its peak RSS, and the anonymous part
// of its resident memory at exit (heap and stacks: the memory the work
// itself holds, without the executable's pages).
func rssFigures(ctx context.Context, o Options, spec storeSpec, name, dir string, t childTask) ([]Figure, error) {
	var peaks, anons []float64
	for i := range o.Reps {
		mb, anon, file, err := rssIn(ctx, spec, dir, t)
		if err != nil {
			return nil, fmt.Errorf("bench: %s peak RSS (%s): %w", name, t.Mode, err)
		}
		o.progress("%s: peak RSS of a child (%s, runs=%d, S=%d), repetition %d/%d: %.1f MB (at exit: %.1f MB anonymous, %.1f MB file-backed)",
			name, t.Mode, max(t.Runs, 1), t.Steps, i+1, o.Reps, mb, anon, file)
		peaks, anons = append(peaks, mb), append(anons, anon)
	}
	f := Figure{Measure: 5, Store: name, Steps: t.Steps, Runs: max(t.Runs, 1)}
	if t.Mode == modeIdle {
		return []Figure{
			f.named("peak_rss_idle", "peak RSS of an idle child (baseline)", "MB").summarize(peaks),
			f.named("rss_anon_idle", "anonymous RSS of an idle child at exit", "MB").summarize(anons),
		}, nil
	}
	return []Figure{
		f.named("peak_rss", "peak RSS (child process)", "MB").summarize(peaks),
		f.named("rss_anon", "anonymous RSS at exit (heap, stacks)", "MB").summarize(anons),
	}, nil
}
