package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/polyloop/polyloop/bench"
	"github.com/polyloop/polyloop/internal/dsn"
	"github.com/spf13/cobra"
)

// maybeRunBenchChild serves as the benchmark's measurement child when this
// process was started as one (see bench.MaybeRunChild); it must run first.
func maybeRunBenchChild() { bench.MaybeRunChild() }

type benchFlags struct {
	stores []string
	json   bool
	steps  int
	reps   int
	// sweep runs the sweep benchmark instead, of sweepRuns runs.
	sweep      bool
	sweepRuns  int
	sweepSteps int
	// peers, when set, is the peers program: PolyLoop beside the peers.
	peers string
}

func newBenchCmd(a *app) *cobra.Command {
	var f benchFlags
	c := &cobra.Command{
		Use:   "bench [--store memory|sqlite|postgres://...]...",
		Short: "Measure workload W: time and allocations per step, commits, concurrency, resume, memory",
		Long: `Measure the standard workload W (package bench) on each store given with
--store: memory, sqlite (a fresh file per measurement) or a postgres:// DSN (a
fresh schema per measurement). At the default sizes it takes minutes; --steps
and --reps make it shorter. Progress goes to standard error; the report to
standard output (--json for programs). Each figure is the median of the
repetitions, with min and max; the report ends with the goals of the
performance issue (in-memory time per step, time per step over two commit
floors — fsync, PostgreSQL's commit round trip, both measured —, 64 × 50
throughput, resume start-up, peak RSS of a run, bytes per step), each judged
met or missed at the standard sizes with at least 5 repetitions. Resume and
peak RSS are measured in child processes of this binary.

--sweep runs the sweep benchmark instead: a sweep of 1,000 runs of W of 10
steps each, whose scripted model takes 20 ms a call, 64 runs at a time, on a
fresh SQLite file (--sweep-runs sets the number of runs, --sweep-steps their
steps); its wall time is judged against the latency-bound ideal (at most 1.2
times it), and the child process's peak RSS is reported, with the CPU and
the SQLite file's bytes per run (a sample-epoch): at --sweep-steps 2, the
shape of a sample-epoch of issue 36's sweep (a tool call, then the answer),
they are judged against its goals (at most 2,000 µs and 1,600 bytes).

--peers PROGRAM compares PolyLoop with other agent runtimes instead: PROGRAM
is built from the module bench/peers of PolyLoop's repository (cd bench/peers
&& go build -o peers .); it runs W once per process on PolyLoop, CloudWeGo
Eino (in memory) or DBOS Transact (SQLite, PostgreSQL). For each --store and
each peer that keeps runs there, runs of PolyLoop and of the peer alternate,
and the report gives each figure (time, CPU and allocations per step, bytes
stored, peak RSS) for both, and their ratio pair by pair.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.bench(cmd.Context(), cmd, f)
		},
	}
	c.Flags().StringArrayVar(&f.stores, "store", nil, "a store to measure: memory, sqlite or a postgres:// DSN (repeatable; default memory and sqlite)")
	c.Flags().BoolVar(&f.json, "json", false, "print the report as JSON")
	c.Flags().IntVar(&f.steps, "steps", 0, fmt.Sprintf("steps S of each single run (default %d)", bench.DefaultSteps))
	c.Flags().IntVar(&f.reps, "reps", 0, fmt.Sprintf("repetitions of each figure (default %d)", bench.DefaultReps))
	c.Flags().BoolVar(&f.sweep, "sweep", false, "run the sweep benchmark (SQLite) instead")
	c.Flags().IntVar(&f.sweepRuns, "sweep-runs", 0, fmt.Sprintf("runs of the sweep benchmark (default %d)", bench.DefaultSweepRuns))
	c.Flags().IntVar(&f.sweepSteps, "sweep-steps", 0, fmt.Sprintf("steps of each run of the sweep benchmark (default %d)", bench.DefaultSweepSteps))
	c.Flags().StringVar(&f.peers, "peers", "", "compare PolyLoop with the peers this program runs (built from bench/peers)")
	return c
}

func (a *app) bench(parent context.Context, cmd *cobra.Command, f benchFlags) error {
	if f.steps < 0 || f.reps < 0 {
		return fmt.Errorf("--steps and --reps must not be negative")
	}
	for _, s := range f.stores {
		if s != "memory" && s != "sqlite" && !strings.HasPrefix(s, "postgres://") && !strings.HasPrefix(s, "postgresql://") {
			return fmt.Errorf("--store %q: expected memory, sqlite or a postgres:// DSN", dsn.Redact(s))
		}
	}
	ctx, interrupted, stop := interruptible(parent)
	defer stop()
	if f.sweep && f.peers != "" {
		return fmt.Errorf("--sweep and --peers are two benchmarks: give one")
	}
	if f.sweep {
		return a.benchSweep(ctx, f, interrupted)
	}
	if f.peers != "" {
		return a.benchPeers(ctx, f, interrupted)
	}
	rep, err := bench.Run(ctx, bench.Options{Stores: f.stores, Steps: f.steps, Reps: f.reps, Progress: a.stderr})
	return a.benchOutcome(rep, err, f.json, interrupted)
}

// benchOutcome prints a benchmark's report (as JSON with asJSON), or
// returns its error: an interruption's exit code when the benchmark was
// interrupted.
func (a *app) benchOutcome(rep interface{ WriteText(io.Writer) error }, err error, asJSON bool, interrupted func() bool) error {
	if err != nil {
		if interrupted() {
			fmt.Fprintln(a.stderr, "interrupted")
			return &exitErr{code: exitInterrupted}
		}
		return err
	}
	if asJSON {
		return writeJSON(a.machineOut(), rep)
	}
	return rep.WriteText(a.stdout)
}

// benchSweep runs the sweep benchmark.
func (a *app) benchSweep(ctx context.Context, f benchFlags, interrupted func() bool) error {
	if len(f.stores) > 0 || f.steps != 0 {
		return fmt.Errorf("--sweep measures SQLite at its own sizes: it takes no --store or --steps")
	}
	if f.sweepRuns < 0 || f.sweepSteps < 0 {
		return fmt.Errorf("--sweep-runs and --sweep-steps must not be negative")
	}
	rep, err := bench.RunSweep(ctx, bench.SweepOptions{Runs: f.sweepRuns, Steps: f.sweepSteps, Reps: f.reps, Progress: a.stderr})
	return a.benchOutcome(rep, err, f.json, interrupted)
}

// benchPeers compares PolyLoop with the peers of a peers program.
func (a *app) benchPeers(ctx context.Context, f benchFlags, interrupted func() bool) error {
	if f.sweepRuns != 0 {
		return fmt.Errorf("--sweep-runs is for --sweep")
	}
	rep, err := bench.RunPeers(ctx, bench.PeerOptions{Program: f.peers, Stores: f.stores, Steps: f.steps, Reps: f.reps, Progress: a.stderr})
	return a.benchOutcome(rep, err, f.json, interrupted)
}
