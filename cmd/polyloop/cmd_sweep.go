package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/polyloop/polyloop/agentfile"
	"github.com/polyloop/polyloop/internal/dsn"
	"github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/sweepfile"
	"github.com/spf13/cobra"
)

type sweepFlags struct {
	queue       string
	keepEnvs    bool
	concurrency int
	json, quiet bool
	// The dataset controls: --epochs, --tasks, --shuffle, --seed, --limit.
	epochs int
	sel    sweep.Selection
}

func newSweepCmd(a *app) *cobra.Command {
	var f sweepFlags
	c := &cobra.Command{
		Use:   "sweep SWEEP.yaml",
		Short: "Run agents × tasks × epochs, scored and resumable, with statistics",
		Long: `Run a sweep file (docs/sweeps.md): every agent it names on every task of its task
file (JSONL or CSV), for each epoch, with bounded concurrency, then score the
finished runs and print a summary per agent.

Run ids are derived from the sweep's name, the agent's snapshot hash, the task's
id, the epoch and the attempt, so running the same command again skips the
finished runs, resumes the unfinished ones (a run held by another live process
is left to it) and starts only what is missing. A changed agent file has
another snapshot hash: its runs start afresh.

Part of a dataset: --tasks ID,... runs only those tasks, --shuffle orders the
tasks by a hash of --seed and their id (the same order on every machine; tasks
added to the file do not reorder the others), --limit N keeps the first N, and
--epochs N replaces the file's epochs. None of them changes a run's id, so the
same command with the same selection finds its runs, and a wider selection
runs only what it adds. The statistics cover every run the sweep recorded, of
the epochs of its last invocation.

Runs that finish with a stop reason the sweep file retries (default llm_error)
are retried as new runs (attempt 2, 3, ...), after a pause that doubles each
time; the failed attempts stay in the store and in the statistics. A provider
that answers 429 pauses every call to it for a while (rate_limit); providers
bounds the calls under way at once (max_connections).

Progress goes to standard error: a live bar on a terminal, plain lines every
few seconds otherwise, --json for progress events on standard output (one
JSON object a line, the statistics last). The first Ctrl-C stops every run at
its next step boundary, nothing new starts, and the command says how to go on;
a second one cancels at once.

Exit codes: 0 every outcome settled and scored; 1 the sweep ended with
outcomes unsettled (held, failed, waiting at a gate, a changed task) or
unscored because a scorer failed; 2 an error (a bad sweep, agent or task
file, a store failure); 130 interrupted.

With --queue postgres://..., nothing runs here: the command records the sweep
and enqueues one job per run to start, resume or score (a run that has a job
waiting or running already is skipped), and polyloop worker processes on any
machine run them; polyloop workers shows the queue, polyloop stats --sweep the
statistics. Exit code 0 once enqueued.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, n := range []struct {
				flag string
				v    int
			}{{"epochs", f.epochs}, {"limit", f.sel.Limit}} {
				if n.v < 0 || n.v == 0 && cmd.Flags().Changed(n.flag) {
					return fmt.Errorf("--%s %d: expected a positive number (leave the flag out for %s)", n.flag, n.v, map[string]string{
						"epochs": "the sweep file's epochs", "limit": "every task"}[n.flag])
				}
			}
			return a.sweep(cmd.Context(), args[0], f, cmd.Flags().Changed("seed"))
		},
	}
	c.Flags().StringVar(&f.queue, "queue", "", "enqueue the runs as jobs for polyloop worker instead of running them: "+queueFlag)
	c.Flags().IntVar(&f.concurrency, "concurrency", 0, "runs at once (default: the sweep file's concurrency, else 4)")
	c.Flags().BoolVar(&f.keepEnvs, "keep-environments", false, "keep the environment each command scorer ran in (the run's last snapshot) instead of destroying it; kept environments survive later sweeps until polyloop env prune removes them")
	c.Flags().BoolVar(&f.json, "json", false, "print progress events and the statistics as JSON lines on standard output")
	c.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "no progress, only the summary")
	c.Flags().IntVar(&f.epochs, "epochs", 0, "runs of each agent on each task (default: the sweep file's epochs)")
	c.Flags().StringSliceVar(&f.sel.IDs, "tasks", nil, "only these task ids (ID,ID,...)")
	c.Flags().BoolVar(&f.sel.Shuffle, "shuffle", false, "take the tasks in an order shuffled by --seed (the same on every machine)")
	c.Flags().Int64Var(&f.sel.Seed, "seed", 0, "the seed of --shuffle")
	c.Flags().IntVar(&f.sel.Limit, "limit", 0, "only the first N tasks (after --tasks and --shuffle)")
	return c
}

func (a *app) sweep(parent context.Context, path string, f sweepFlags, seedGiven bool) error {
	if f.concurrency < 0 {
		return fmt.Errorf("--concurrency must not be negative")
	}
	if seedGiven && !f.sel.Shuffle {
		return fmt.Errorf("--seed goes with --shuffle")
	}
	if f.queue != "" && f.concurrency != 0 {
		return fmt.Errorf("--concurrency with --queue: nothing runs here; each worker has its own (polyloop worker --concurrency N)")
	}
	if f.queue != "" {
		if err := checkQueueDSN(f.queue); err != nil {
			return err
		}
	}
	in := newInterruption(parent, a.stderr)
	defer in.close()
	ctx := in.ctx
	a.envPool = sweepEnvPool(f.concurrency)
	l, err := sweepfile.Load(ctx, path, &sweepfile.Options{Concurrency: f.concurrency, Epochs: f.epochs, Select: f.sel,
		KeepEnvironments: f.keepEnvs, Agent: &agentfile.Options{Environments: a.envProvider}})
	if err != nil {
		return a.loadFailed(path, err, in.wasCanceled())
	}
	defer l.Close()
	if f.queue != "" {
		return a.enqueue(ctx, l, f)
	}
	throughputGC()
	st, err := openStore(ctx, a.store, createStore)
	if err != nil {
		return err
	}
	defer st.Close()
	ss, ok := st.(sweep.Store)
	if !ok {
		return fmt.Errorf("the store %s keeps no sweeps", dsn.Redact(a.store))
	}
	show := a.sweepDisplay(f)
	in.begin()
	res, err := l.Sweep.Run(ctx, sweep.RunOptions{Store: ss, Concurrency: f.concurrency, Stop: in.stopCh,
		Events: show.event, ProgressEvery: show.every})
	show.close()
	var tasks *sweep.TaskErrors
	if errors.As(err, &tasks) {
		return err
	}
	if res == nil {
		return err
	}
	if serr := a.sweepSummary(ctx, ss, l.Sweep, f.json); serr != nil && err == nil {
		err = serr
	}
	return a.sweepOutcome(l, res, err, in, show.mode == displayQuiet || show.mode == displayJSON)
}

// sweepOutcome turns a sweep's result into the command's outcome and says
// how to go on.
func (a *app) sweepOutcome(l *sweepfile.Loaded, res *sweep.Result, err error, in *interruption, listErrors bool) error {
	p := res.Progress
	again := "  polyloop sweep " + l.Path + a.storeFlag()
	_, canceled := in.state()
	switch {
	case errors.Is(err, sweep.ErrStopped) || (canceled && errors.Is(err, context.Canceled)):
		how := "stopped at a step boundary: every run's action in progress finished and is recorded"
		if canceled {
			how = "cancelled at once by the second signal: what was under way has no recorded outcome"
		}
		fmt.Fprintf(a.stderr, "interrupted: %s; %d of %d outcomes are settled, the rest are resumable. To go on:\n%s\n", how, p.Done, p.Total, again)
		return &exitErr{code: exitInterrupted}
	case err != nil:
		fmt.Fprintf(a.stderr, "the sweep stopped: %d of %d outcomes are settled; once the problem is fixed, go on with:\n%s\n", p.Done, p.Total, again)
		return err
	}
	for _, e := range res.Errors {
		if listErrors { // the progress display has shown them
			fmt.Fprintf(a.stderr, "run %s failed: %s\n", e.RunID, causeText(e.Err))
		}
	}
	var left []string
	for _, c := range []struct {
		n    int
		what string
	}{{p.Held, "held by another live process"}, {p.Failed, "failed with an error"}, {p.Suspended, "waiting at a gate (polyloop approve / deliver)"},
		{p.Changed, "whose task changed in the task file"}, {p.Stopped, "stopped"}} {
		if c.n > 0 {
			left = append(left, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	if len(left) > 0 || p.ScoreFailures > 0 {
		if p.ScoreFailures > 0 {
			left = append(left, fmt.Sprintf("%s a scorer could not score", plural(p.ScoreFailures, "run")))
		}
		fmt.Fprintf(a.stderr, "incomplete: %s. Running the same command again does what is left:\n%s\n", strings.Join(left, ", "), again)
		return &exitErr{code: exitStopped}
	}
	return nil
}

// sweepSummary prints the statistics of the sweep by agent: a table, or
// one JSON line.
func (a *app) sweepSummary(ctx context.Context, st sweep.Store, s *sweep.Sweep, asJSON bool) error {
	stats, err := sweep.ComputeStats(ctx, st, s.Name(), sweep.StatsOptions{By: sweep.ByAgent})
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSONLine(a.machineOut(), struct {
			Event string       `json:"event"`
			Stats *sweep.Stats `json:"stats"`
		}{"summary", stats})
	}
	return writeSweepTable(a.stdout, stats)
}

// enqueue is polyloop sweep --queue: the sweep's runs become jobs.
func (a *app) enqueue(ctx context.Context, l *sweepfile.Loaded, f sweepFlags) error {
	q, store, closeQueue, err := a.openQueue(ctx, f.queue)
	if err != nil {
		return err
	}
	defer closeQueue()
	res, err := q.Enqueue(ctx, l.Sweep, store)
	if err != nil {
		return err
	}
	if f.json {
		return writeJSONLine(a.machineOut(), struct {
			Event      string `json:"event"`
			Sweep      string `json:"sweep"`
			Inserted   int    `json:"inserted"`
			Duplicates int    `json:"already_queued"`
		}{"enqueued", l.Sweep.Name(), res.Inserted, res.Duplicates})
	}
	if res.Inserted == 0 && res.Duplicates == 0 {
		fmt.Fprintf(a.stdout, "sweep %s: nothing to enqueue: every run is finished and scored (polyloop stats --sweep %s)\n",
			l.Sweep.Name(), l.Sweep.Name())
		return nil
	}
	storeFlag := ""
	if a.storeGiven {
		storeFlag = a.storeFlag()
	}
	fmt.Fprintf(a.stdout, "sweep %s: %d jobs enqueued, %d runs already had one. Run them with:\n  polyloop worker --queue '%s'%s\n",
		l.Sweep.Name(), res.Inserted, res.Duplicates, dsn.Redact(f.queue), storeFlag)
	return nil
}
