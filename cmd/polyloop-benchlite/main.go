// Command polyloop-benchlite runs the standard benchmark (package bench)
// from a binary that links only the library and its stores: no provider
// SDK, no OpenTelemetry, no MCP, no CLI framework. Its figures are those of
// `polyloop bench`; only the executable differs, and with it the peak
// resident memory, which counts the pages of the executable a process
// touches (see docs/performance.md).
//
// Usage:
//
//	polyloop-benchlite [--store memory|sqlite|postgres://...]... [--steps S] [--reps N] [--json]
//	polyloop-benchlite --sweep [--sweep-runs N] [--reps N] [--json]
//
// The flags are those of `polyloop bench`; progress goes to standard error,
// the report to standard output.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/polyloop/polyloop/bench"
)

func main() {
	bench.MaybeRunChild() // first: this executable is also the measurement child
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "polyloop-benchlite:", err)
		}
		os.Exit(2)
	}
}

// flags are the command line of polyloop-benchlite.
type flags struct {
	opts    bench.Options
	jsonOut bool
	// sweep runs the sweep benchmark instead (bench.RunSweep).
	sweep     bool
	sweepRuns int
}

func parseFlags(args []string, stderr io.Writer) (flags, error) {
	var f flags
	fs := flag.NewFlagSet("polyloop-benchlite", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Func("store", "a store to measure: memory, sqlite or a postgres:// DSN (repeatable; default memory and sqlite)",
		func(s string) error { f.opts.Stores = append(f.opts.Stores, s); return nil })
	fs.IntVar(&f.opts.Steps, "steps", 0, fmt.Sprintf("steps S of each single run (default %d)", bench.DefaultSteps))
	fs.IntVar(&f.opts.Reps, "reps", 0, fmt.Sprintf("repetitions of each figure (default %d)", bench.DefaultReps))
	fs.BoolVar(&f.jsonOut, "json", false, "print the report as JSON")
	fs.BoolVar(&f.sweep, "sweep", false, "run the sweep benchmark (SQLite) instead")
	fs.IntVar(&f.sweepRuns, "sweep-runs", 0, fmt.Sprintf("runs of the sweep benchmark (default %d)", bench.DefaultSweepRuns))
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if f.opts.Steps < 0 || f.opts.Reps < 0 || f.sweepRuns < 0 {
		return f, errors.New("--steps, --reps and --sweep-runs must not be negative")
	}
	if f.sweep && (len(f.opts.Stores) > 0 || f.opts.Steps != 0) {
		return f, errors.New("--sweep measures SQLite at its own sizes: it takes no --store or --steps")
	}
	f.opts.Progress = stderr
	return f, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	f, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return measure(ctx, f, stdout)
}

// measure runs the benchmark and prints its report.
func measure(ctx context.Context, f flags, stdout io.Writer) error {
	if f.sweep {
		return measureSweep(ctx, f, stdout)
	}
	rep, err := bench.Run(ctx, f.opts)
	if err != nil {
		return err
	}
	if f.jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.WriteText(stdout)
}

// measureSweep runs the sweep benchmark and prints its report.
func measureSweep(ctx context.Context, f flags, stdout io.Writer) error {
	rep, err := bench.RunSweep(ctx, bench.SweepOptions{Runs: f.sweepRuns, Reps: f.opts.Reps, Progress: f.opts.Progress})
	if err != nil {
		return err
	}
	if f.jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.WriteText(stdout)
}
