package main

import (
	"context"
	"errors"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/polyloop/polyloop/bench"
)

// measure prepares one run of W with def on p, runs it and measures it:
// the run's wall time, the process's CPU time and heap allocations over
// it, the process's peak resident memory, and the store's size after it.
// The place is removed afterwards.
func measure(ctx context.Context, name string, def runtimeDef, w bench.Workload, p *place) (res bench.PeerResult, err error) {
	defer func() { err = errors.Join(err, p.remove(context.WithoutCancel(ctx))) }()
	prep, err := def.prepare(ctx, w, p)
	if err != nil {
		return res, err
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0 := cpuTime()
	start := time.Now()
	err = prep.run(ctx)
	wall := time.Since(start)
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&after)
	if cerr := prep.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return res, err
	}
	res = bench.PeerResult{Runtime: name, Version: moduleVersion(def.module), Store: p.kind, Steps: w.Steps,
		WallNS: wall.Nanoseconds(), CPUNS: cpu.Nanoseconds(), Mallocs: after.Mallocs - before.Mallocs, PeakRSSKB: peakRSSKB()}
	res.StoredBytes, err = p.size(ctx)
	return res, err
}

// cpuTime is the user and system CPU time of this process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSSKB is VmHWM from /proc/self/status in KiB, 0 when unknown.
func peakRSSKB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// moduleVersion is the version of module path linked into this program:
// "(this tree)" for a module replaced by a directory (PolyLoop's own, in
// this repository).
func moduleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, d := range bi.Deps {
		if d.Path != path {
			continue
		}
		if d.Version == "v0.0.0" || d.Replace != nil && d.Replace.Version == "" { // replaced by a directory
			return "(this tree)"
		}
		return d.Version
	}
	if bi.Main.Path == path {
		return bi.Main.Version
	}
	return "unknown"
}
