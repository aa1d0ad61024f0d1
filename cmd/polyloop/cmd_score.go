package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/polyloop/polyloop/agentfile"
	"github.com/polyloop/polyloop/internal/dsn"
	"github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/sweep/ledger"
	"github.com/polyloop/polyloop/sweepfile"
	"github.com/spf13/cobra"
)

type scoreFlags struct {
	missing bool
}

func newScoreCmd(a *app) *cobra.Command {
	var f scoreFlags
	c := &cobra.Command{
		Use:   "score SWEEP|RUN...",
		Short: "Score a sweep's finished runs again, without running them",
		Long: `Score finished runs of a sweep again, with the sweep's scorers, without running
anything: each run's answer is read from its log and the new scores replace
the stored ones. SWEEP is a sweep's name (the sweep file it was run from is
loaded again, and must still have the same agents) or a sweep file (its
scorers, perhaps changed, score the runs); RUN is a run id of a sweep.

A model-graded scorer's grading run is a recorded run of its own; one that
exists for the same grader is reused, so scoring again costs no model call.
Unfinished runs are left alone, and runs whose stop reason the sweep retries
are never scored.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.score(cmd.Context(), args, f)
		},
	}
	c.Flags().BoolVar(&f.missing, "missing", false, "score only where a scorer's score is missing or stale")
	return c
}

func (a *app) score(parent context.Context, args []string, f scoreFlags) error {
	ctx, interrupted, stop := interruptible(parent)
	defer stop()
	st, err := openStore(ctx, a.store, existingStore)
	if err != nil {
		return err
	}
	defer st.Close()
	ss, ok := st.(sweep.Store)
	if !ok {
		return fmt.Errorf("the store %s keeps no sweeps", dsn.Redact(a.store))
	}
	jobs, err := a.scoreJobs(ctx, ss, args)
	if err != nil {
		return err
	}
	failed := false
	for _, j := range jobs {
		res, err := a.scoreOne(ctx, ss, j, f.missing)
		if err != nil {
			if interrupted() {
				fmt.Fprintln(a.stderr, "interrupted: the scores written so far are kept")
				return &exitErr{code: exitInterrupted}
			}
			return err
		}
		failed = failed || res.FailureCount > 0
	}
	if failed {
		return &exitErr{code: exitStopped}
	}
	return nil
}

// scoreJob is one sweep to score, and which of its runs (nil: all).
type scoreJob struct {
	sweepFile string // a sweep file given
	name      string // or a recorded sweep's name
	runs      []string
}

// scoreJobs sorts the arguments into sweeps and their runs.
func (a *app) scoreJobs(ctx context.Context, ss sweep.Store, args []string) ([]scoreJob, error) {
	var jobs []scoreJob
	runs := map[string][]string{}
	var order []string
	for _, arg := range args {
		if ext := strings.ToLower(filepath.Ext(arg)); ext == ".yaml" || ext == ".yml" {
			if _, err := os.Stat(arg); err == nil {
				jobs = append(jobs, scoreJob{sweepFile: arg})
				continue
			}
		}
		if _, err := ss.Sweep(ctx, arg); err == nil {
			jobs = append(jobs, scoreJob{name: arg})
			continue
		} else if !errors.Is(err, ledger.ErrNotFound) {
			return nil, err
		}
		states, err := ss.Runs(ctx, []string{arg})
		if err != nil {
			return nil, err
		}
		if len(states) == 0 {
			return nil, fmt.Errorf("%q is neither a sweep file, a sweep's name, nor a run of a sweep in %s", arg, dsn.Redact(a.store))
		}
		name := states[0].Sweep
		if _, seen := runs[name]; !seen {
			order = append(order, name)
		}
		runs[name] = append(runs[name], arg)
	}
	for _, name := range order {
		jobs = append(jobs, scoreJob{name: name, runs: runs[name]})
	}
	return jobs, nil
}

// scoreOne loads a sweep and scores its runs.
func (a *app) scoreOne(ctx context.Context, ss sweep.Store, j scoreJob, missing bool) (sweep.RescoreResult, error) {
	var l *sweepfile.Loaded
	var err error
	if j.sweepFile != "" {
		l, err = sweepfile.Load(ctx, j.sweepFile, &sweepfile.Options{Agent: &agentfile.Options{Environments: a.envProvider}})
	} else {
		var m sweep.Manifest
		if m, err = sweep.ReadManifest(ctx, ss, j.name); err == nil {
			l, err = sweepfile.Reload(ctx, m, &sweepfile.Options{Agent: &agentfile.Options{Environments: a.envProvider}})
		}
	}
	if err != nil {
		return sweep.RescoreResult{}, err
	}
	defer l.Close()
	res, err := l.Sweep.Rescore(ctx, ss, j.runs, missing)
	if err != nil {
		return res, err
	}
	var names []string
	for _, sc := range l.Sweep.Manifest().Scorers {
		names = append(names, sc.Name)
	}
	if res.Partly == 0 {
		fmt.Fprintf(a.stdout, "sweep %s: %d runs scored (%s)", l.Sweep.Name(), res.Scored, strings.Join(names, ", "))
	} else {
		var failed []string
		for _, name := range names {
			if n := res.FailedBy[name]; n > 0 {
				failed = append(failed, fmt.Sprintf("%s could not score %d", name, n))
			}
		}
		fmt.Fprintf(a.stdout, "sweep %s: %d of %d runs scored by every scorer (%s); %d runs partly unscored: %s", l.Sweep.Name(),
			res.Scored, res.Scored+res.Partly, strings.Join(names, ", "), res.Partly, strings.Join(failed, ", "))
	}
	if res.Unfinished > 0 {
		fmt.Fprintf(a.stdout, "; %d unfinished runs left alone", res.Unfinished)
	}
	if res.Retried > 0 {
		fmt.Fprintf(a.stdout, "; %d runs not scored (a stop reason the sweep retries)", res.Retried)
	}
	fmt.Fprintln(a.stdout)
	for _, f := range res.Failures {
		fmt.Fprintf(a.stderr, "run %s: %s\n", f.RunID, causeText(f.Err))
	}
	if more := res.FailureCount - len(res.Failures); more > 0 {
		fmt.Fprintf(a.stderr, "... and %d more scoring failures\n", more)
	}
	return res, nil
}
