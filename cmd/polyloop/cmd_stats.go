package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

type statsFlags struct {
	filterFlags
	by        string
	json, csv bool
	// sweep and scorer: the statistics of a sweep (sweep_stats.go).
	sweep, scorer string
}

func newStatsCmd(a *app) *cobra.Command {
	var f statsFlags
	c := &cobra.Command{
		Use:   "stats",
		Short: "Statistics over runs: stop reasons, steps/tokens/cost percentiles, unfinished runs",
		Long: `Statistics over the selected runs, optionally grouped by agent or snapshot hash:
the stop-reason distribution and the steps, tokens and cost percentiles (p50,
p90, max; nearest rank) over finished runs; the number of runs whose cost is
partly unknown, which the cost percentiles leave out ("unknown" when no run's
cost is known); model calls and actions of unknown outcome (intents without
results); and the unfinished runs, counted and listed by id — never dropped.

Text and --csv print numbers to 6 significant digits; --json gives them at
full float64 precision. A percentile without values is "unknown" in text, an
empty cell in CSV and null in JSON.

With --sweep NAME, the statistics of a sweep (polyloop sweep), grouped --by
agent, task or epoch: its outcomes (each agent's last attempt at each task and
epoch) by stop reason and by the attempts they took; accuracy (the mean score
of the first scorer, or --scorer's) with its standard error and 95% interval
clustered by task across epochs; pass@k for k up to the epochs; and the
statistics of every run, failed attempts included (stop reasons, steps,
tokens and cost percentiles and sums, unknown costs counted, unfinished runs
listed). --json and --csv give the same numbers, at full precision.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.stats(cmd.Context(), &f)
		},
	}
	f.register(c.Flags())
	c.Flags().StringVar(&f.by, "by", "", "group by agent or hash")
	c.Flags().BoolVar(&f.json, "json", false, "print the statistics as JSON")
	c.Flags().BoolVar(&f.csv, "csv", false, "print the statistics as CSV, one row per group")
	c.Flags().StringVar(&f.sweep, "sweep", "", "the statistics of this sweep (--by agent, task or epoch)")
	c.Flags().StringVar(&f.scorer, "scorer", "", "with --sweep: the scorer of accuracy and pass@k (default the sweep's first)")
	return c
}

func (a *app) stats(ctx context.Context, f *statsFlags) error {
	if f.json && f.csv {
		return fmt.Errorf("--json and --csv exclude each other")
	}
	if f.sweep != "" {
		return a.sweepStats(ctx, f)
	}
	if f.scorer != "" {
		return fmt.Errorf("--scorer goes with --sweep")
	}
	if f.by != "" && f.by != "agent" && f.by != "hash" {
		return fmt.Errorf("--by %q: expected agent or hash", f.by)
	}
	if f.json && f.csv {
		return fmt.Errorf("--json and --csv exclude each other")
	}
	st, err := a.openRead(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	runs, err := listRuns(ctx, st, &f.filterFlags)
	if err != nil {
		return err
	}
	groups := computeStats(runs, f.by)
	switch {
	case f.json:
		if groups == nil {
			groups = []*groupStats{}
		}
		return writeJSON(a.stdout, groups)
	case f.csv:
		return writeStatsCSV(a, groups)
	}
	if len(groups) == 0 {
		fmt.Fprintln(a.stdout, "no runs")
		fmt.Fprintln(a.stderr, noRuns(st))
	}
	for _, g := range groups {
		writeStatsText(a, g, f.by)
	}
	return nil
}

func writeStatsText(a *app, g *groupStats, by string) {
	w := a.stdout
	label := g.Group
	if by != "" {
		label = by + " " + g.Group
	}
	fmt.Fprintf(w, "%s: %d runs, %d finished, %d unfinished\n", label, g.Runs, g.Finished, g.Unfinished)
	var parts []string
	for _, r := range stopReasons {
		if n := g.StopReasons[r]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d (%.1f%%)", r, n, 100*float64(n)/float64(g.Finished)))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "  stop reasons: %s\n", strings.Join(parts, ", "))
	}
	if g.Finished > 0 {
		fmt.Fprintf(w, "  steps   %s\n", distText(g.Steps, count))
		fmt.Fprintf(w, "  tokens  %s\n", distText(g.Tokens, count))
		fmt.Fprintf(w, "  cost    %s", distText(g.CostUSD, func(v *float64) string { return "$" + usd(v) }))
		if g.CostUnknownRuns > 0 {
			fmt.Fprintf(w, "  (%d runs with unknown cost, left out)", g.CostUnknownRuns)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  unknown outcome: %d model calls, %d actions\n", g.UnknownModelCalls, g.UnknownActions)
	if g.Unfinished > 0 {
		fmt.Fprintf(w, "  unfinished: %s\n", strings.Join(g.UnfinishedRuns, " "))
	}
}

// distText is a distribution as text, "unknown" without values.
func distText(d dist, format func(*float64) string) string {
	if d.N == 0 {
		return "unknown"
	}
	return fmt.Sprintf("p50 %s  p90 %s  max %s", format(d.P50), format(d.P90), format(d.Max))
}

// count is a statistic of counts (steps, tokens), or "" when unknown.
func count(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

// usd is a cost to 6 significant digits (sums of float costs carry noise
// such as 0.00020899999999999998), or "" when unknown.
func usd(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'g', 6, 64)
}

func writeStatsCSV(a *app, groups []*groupStats) error {
	w := csv.NewWriter(a.stdout)
	head := []string{"group", "runs", "finished", "unfinished"}
	for _, r := range stopReasons {
		head = append(head, string(r))
	}
	for _, m := range []string{"steps", "tokens", "cost_usd"} {
		head = append(head, m+"_p50", m+"_p90", m+"_max")
	}
	head = append(head, "cost_unknown_runs", "unknown_model_calls", "unknown_actions", "unfinished_runs")
	if err := w.Write(head); err != nil {
		return err
	}
	for _, g := range groups {
		row := []string{g.Group, strconv.Itoa(g.Runs), strconv.Itoa(g.Finished), strconv.Itoa(g.Unfinished)}
		for _, r := range stopReasons {
			row = append(row, strconv.Itoa(g.StopReasons[r]))
		}
		for _, d := range []dist{g.Steps, g.Tokens} {
			row = append(row, count(d.P50), count(d.P90), count(d.Max))
		}
		row = append(row, usd(g.CostUSD.P50), usd(g.CostUSD.P90), usd(g.CostUSD.Max))
		row = append(row, strconv.Itoa(g.CostUnknownRuns), strconv.Itoa(g.UnknownModelCalls), strconv.Itoa(g.UnknownActions),
			strings.Join(g.UnfinishedRuns, " "))
		if err := w.Write(row); err != nil {
			return err
		}
	}
	w.Flush()
	return w.Error()
}
