package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/polyloop/polyloop"
	traj "github.com/polyloop/polyloop/internal/trajectory"
	"github.com/spf13/cobra"
)

func newLsCmd(a *app) *cobra.Command {
	var f filterFlags
	var asJSON bool
	c := &cobra.Command{
		Use:   "ls",
		Short: "List runs: id, agent, start, steps, stop reason or unfinished, tokens, cost",
		Long: `List runs, oldest first. Unfinished runs show "unfinished" and their totals so
far, computed from their logs; a run that a live process drives now says
"running (pid N on HOST, since T)" (its lease's holder; ls takes no lease);
a run suspended at a gate shows "awaiting
approval" or "awaiting delivery" (polyloop approve, polyloop deliver). The text rounds costs to 4 decimals, shows a
cost partly unknown as a lower bound ("≥ $0.0012") and says "unknown" when no
cost is known; --json
gives the totals as stored, at full float64 precision (cost_unknown says
whether part of the cost is unknown), and "running" names the live holder.

Before the first run the default store does not exist: the list is empty (and
--json prints []). A --store given on the command line must exist.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.ls(cmd.Context(), &f, asJSON)
		},
	}
	f.register(c.Flags())
	c.Flags().BoolVar(&asJSON, "json", false, "print the runs as a JSON array")
	return c
}

func (a *app) ls(ctx context.Context, f *filterFlags, asJSON bool) error {
	st, err := a.openRead(ctx, readOnlyStore)
	if err != nil {
		return err
	}
	defer st.Close()
	summaries, err := listRuns(ctx, st, f)
	if err != nil {
		return err
	}
	runs, err := withRunning(ctx, st, summaries)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(a.machineOut(), runs)
	}
	if len(runs) == 0 {
		fmt.Fprintln(a.stderr, noRuns(st))
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tAGENT\tSTARTED\tSTEPS\tSTOP\tTOKENS\tCOST")
	for _, r := range runs {
		stop := "unfinished"
		switch {
		case r.Finished:
			stop = string(r.StopReason)
		case r.Running != nil:
			stop = runningText(*r.Running)
		case r.Awaiting != "":
			stop = "awaiting " + r.Awaiting
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.RunID, r.Agent, r.StartedAt.Local().Format("2006-01-02 15:04:05"),
			traj.StepCount(*r.Totals), stop, tokensCell(r.Totals.Tokens(), r.Totals.TokensUnknown), costShort.cost(r.Totals.CostUSD, r.Totals.CostUnknown))
	}
	return tw.Flush()
}

// lsRun is a run as ls lists it: its summary, and the live process that
// drives it now, if any.
type lsRun struct {
	polyloop.RunSummary
	Running *polyloop.LeaseOwner `json:"running,omitempty"`
}

// withRunning asks the store which unfinished runs a live process drives
// (trajectory.Holder: nil where the store cannot tell). It takes no lease.
func withRunning(ctx context.Context, st store, summaries []polyloop.RunSummary) ([]lsRun, error) {
	runs := make([]lsRun, len(summaries))
	for i, r := range summaries {
		runs[i].RunSummary = r
		if r.Finished {
			continue
		}
		holder, err := traj.Holder(ctx, st, r.RunID)
		if err != nil {
			return nil, err
		}
		runs[i].Running = holder
	}
	return runs, nil
}
