package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// fsyncSyncs is how many syncs one repetition of the fsync floor takes.
const fsyncSyncs = 200

// fsyncMicros is the median time of an fsync after overwriting 4 KiB of a
// file in dir: the floor under one durable commit on that file system.
func fsyncMicros(dir string) (us float64, err error) {
	f, err := os.CreateTemp(dir, "fsync-")
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, f.Close(), os.Remove(f.Name())) }()
	buf := make([]byte, 4096)
	var ds []time.Duration
	for i := range fsyncSyncs {
		if _, err := f.WriteAt(buf, int64(i%4)*4096); err != nil {
			return 0, err
		}
		t0 := time.Now()
		if err := f.Sync(); err != nil {
			return 0, err
		}
		ds = append(ds, time.Since(t0))
	}
	slices.Sort(ds)
	return float64(ds[len(ds)/2].Nanoseconds()) / 1e3, nil
}

// measureFsync gives the fsync floor of the SQLite store's file system:
// measurement 2 cannot go below two of these per step.
func measureFsync(ctx context.Context, o Options, name, dir string) (Figure, error) {
	var xs []float64
	for range o.Reps {
		if err := ctx.Err(); err != nil {
			return Figure{}, err
		}
		us, err := fsyncMicros(dir)
		if err != nil {
			return Figure{}, fmt.Errorf("bench: fsync floor in %s: %w", filepath.Clean(dir), err)
		}
		xs = append(xs, us)
	}
	o.progress("%s: fsync of a 4 KiB overwrite in %s: %.0f µs (median of medians)", name, dir, Figure{}.summarize(xs).Median)
	f := Figure{Measure: 2, Store: name, Runs: 1}
	return f.named("fsync", "fsync of 4 KiB (floor of one commit)", "µs").summarize(xs), nil
}
