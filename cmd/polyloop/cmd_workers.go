package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/polyloop/polyloop/sweepqueue"
	"github.com/spf13/cobra"
)

type workersFlags struct {
	queue, sweep string
	stuckAfter   time.Duration
	json         bool
}

func newWorkersCmd(a *app) *cobra.Command {
	var f workersFlags
	c := &cobra.Command{
		Use:   "workers --queue postgres://…",
		Short: "Show a sweep queue: depth, running jobs by worker, stuck and cancelled jobs",
		Long: `Show the jobs of a sweep queue (polyloop sweep --queue, polyloop worker): how many
are in each state, the jobs each worker is running, the jobs running longer than
--stuck-after (a worker that died: River's rescuer retries them; or a step that
hangs), the jobs waiting for a retry after an error, and the jobs cancelled for
a person (a run that finished resume_state_unknown or waits at a gate, a seam's
error on every attempt, a changed agent) with their last error.

--json prints the same as one JSON object. It writes nothing to the database.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.workers(cmd.Context(), f) },
	}
	c.Flags().StringVar(&f.queue, "queue", "", queueFlag)
	c.Flags().StringVar(&f.sweep, "sweep", "", "only the jobs of this sweep")
	c.Flags().DurationVar(&f.stuckAfter, "stuck-after", 2*time.Minute, "a job whose execution began longer ago than this is listed as stuck")
	c.Flags().BoolVar(&f.json, "json", false, "print the status as one JSON object")
	_ = c.MarkFlagRequired("queue")
	return c
}

func (a *app) workers(ctx context.Context, f workersFlags) error {
	q, err := readQueue(ctx, f.queue)
	if err != nil {
		return err
	}
	defer q.Close()
	st, err := q.Status(ctx, sweepqueue.StatusOptions{Sweep: f.sweep, StuckAfter: f.stuckAfter})
	if err != nil {
		return err
	}
	if f.json {
		return writeJSON(a.machineOut(), st)
	}
	writeQueueStatus(a.stdout, st)
	return nil
}

// writeQueueStatus prints a queue's status for people.
func writeQueueStatus(w io.Writer, st *sweepqueue.Status) {
	var states []string
	for s := range st.States {
		states = append(states, s)
	}
	sort.Strings(states)
	var counts []string
	for _, s := range states {
		counts = append(counts, fmt.Sprintf("%s %d", s, st.States[s]))
	}
	if len(counts) == 0 {
		counts = []string{"no jobs"}
	}
	fmt.Fprintf(w, "queue (schema %s): %d waiting or running; %s\n", st.Schema, st.Pending(), strings.Join(counts, ", "))
	fmt.Fprintf(w, "running: %d workers\n", len(st.Workers))
	for _, wj := range st.Workers {
		fmt.Fprintf(w, "  %s: %d jobs\n", wj.Worker, len(wj.Jobs))
		for _, j := range wj.Jobs {
			fmt.Fprintf(w, "    job %d run %s, attempt %d, for %s\n", j.ID, j.RunID, j.Attempt, j.Age.Round(time.Second))
		}
	}
	if st.RunningNotListed > 0 {
		fmt.Fprintf(w, "  and %d more running jobs, not listed\n", st.RunningNotListed)
	}
	for _, l := range []struct {
		title string
		jobs  []sweepqueue.Job
		total int
	}{{"stuck", st.Stuck, len(st.Stuck)}, {"waiting for a retry", st.Retrying, st.States["retryable"]},
		{"cancelled (for a person)", st.Cancelled, st.States["cancelled"]}, {"discarded (every attempt failed)", st.Discarded, st.States["discarded"]}} {
		if len(l.jobs) == 0 {
			continue
		}
		if l.total > len(l.jobs) {
			fmt.Fprintf(w, "%s: %d (the oldest %d listed)\n", l.title, l.total, len(l.jobs))
		} else {
			fmt.Fprintf(w, "%s: %d\n", l.title, len(l.jobs))
		}
		for _, j := range l.jobs {
			line := fmt.Sprintf("  job %d run %s, attempt %d, %s ago", j.ID, j.RunID, j.Attempt, j.Age.Round(time.Second))
			if j.Worker != "" {
				line += ", last on " + j.Worker
			}
			if j.Error != "" {
				line += ": " + j.Error
			}
			fmt.Fprintln(w, line)
		}
	}
}
