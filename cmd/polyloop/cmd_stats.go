package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/polyloop/polyloop/internal/costtext"
	"github.com/polyloop/polyloop/internal/runstats"
	"github.com/spf13/cobra"
)

type statsFlags struct {
	filterFlags
	by        string
	json, csv bool
	// sweep and scorer: the statistics of a sweep (sweep_stats.go);
	// compare: two of its agents compared (sweep_compare.go).
	sweep, scorer string
	compare       []string
}

func newStatsCmd(a *app) *cobra.Command {
	var f statsFlags
	c := &cobra.Command{
		Use:   "stats",
		Short: "Statistics over runs: stop reasons, steps/tokens/cost sums and percentiles, spend, unfinished and running runs",
		Long: `Statistics over the selected runs, optionally grouped by agent name, agent
configuration (--by hash: the hash of the snapshot without the task, so the runs
of one configuration on many tasks form one group; it reads each run's first
record; --hash H selects its runs) or snapshot hash (--by snapshot, --snapshot H:
the runs given the same inputs):
the stop-reason distribution; the unfinished runs suspended at a gate (awaiting an
approval or a delivery); the steps, tokens and cost of the finished runs,
each as n, sum and percentiles (p50, p90, max; nearest rank); the number of
runs whose tokens or cost are partly unknown, which those distributions leave
out; what all the runs spent, finished or not, and the unfinished runs' part
of it; model calls and actions of unknown outcome (intents without results);
and the unfinished runs, counted and listed by id — never dropped; those a live
process drives now (the live holder of their lease) are counted and listed as
running, and what they have under way is not of unknown outcome.

A spend that is partly unknown (a model call of unknown outcome, a reply
without usage or without a price) is a lower bound: text shows it as
"≥ $0.12" or "≥ 1200 tokens", never as the spend; --json and --csv give the
known part with tokens_unknown / cost_unknown set.

Text and --csv print numbers to 6 significant digits; --json gives them at
full float64 precision. A statistic without values is "unknown" in text, an
empty cell in CSV and null in JSON.

With --sweep NAME, the statistics of a sweep (polyloop sweep), grouped --by
agent, hash (agent configuration), task or epoch: its outcomes (each agent's last attempt at each task and
epoch) by stop reason and by the attempts they took; accuracy (the mean score
of the first scorer, or --scorer's) with its standard error and 95% interval
clustered by task across epochs; pass@k for k up to the epochs; and the
statistics of every run, failed attempts included (stop reasons, steps,
tokens and cost percentiles and sums, unknown costs counted, unfinished runs
listed). --json and --csv give the same numbers, at full precision.

With --sweep NAME --compare A B, agents A and B of the sweep compared on the
tasks and epochs both have a scored outcome of: the mean of the paired
differences A − B with its standard error clustered by task and 95% interval,
the tasks each wins and the ties, the per-task differences, the outcomes left
unpaired, and each agent's pass@k and pass^k.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.compareArgs(cmd.Flags().Changed("compare"), args); err != nil {
				return err
			}
			return a.stats(cmd.Context(), &f)
		},
	}
	f.register(c.Flags())
	c.Flags().StringVar(&f.by, "by", "", "group by agent, hash (agent configuration: the snapshot without the task) or snapshot (the snapshot hash: the same inputs)")
	c.Flags().BoolVar(&f.json, "json", false, "print the statistics as JSON")
	c.Flags().BoolVar(&f.csv, "csv", false, "print the statistics as CSV, one row per group")
	c.Flags().StringVar(&f.sweep, "sweep", "", "the statistics of this sweep (--by agent, hash, task or epoch)")
	c.Flags().StringVar(&f.scorer, "scorer", "", "with --sweep: the scorer of accuracy and pass@k (default the sweep's first)")
	c.Flags().StringSliceVar(&f.compare, "compare", nil, "with --sweep: --compare A B compares agent A with agent B on the same tasks and epochs")
	return c
}

// compareArgs reads --compare A B (A on the flag, B the one argument) or
// --compare A,B; no other command line takes an argument.
func (f *statsFlags) compareArgs(given bool, args []string) error {
	switch {
	case !given && len(args) > 0:
		return fmt.Errorf("unexpected argument %q (stats takes flags only)", args[0])
	case !given:
		return nil
	case len(f.compare) == 1 && len(args) == 1:
		f.compare = append(f.compare, args[0])
	case len(f.compare) == 2 && len(args) == 0:
	default:
		return fmt.Errorf("--compare takes two agents: --compare A B")
	}
	return nil
}

func (a *app) stats(ctx context.Context, f *statsFlags) error {
	if f.json && f.csv {
		return fmt.Errorf("--json and --csv exclude each other")
	}
	if f.compare != nil && f.sweep == "" {
		return fmt.Errorf("--compare goes with --sweep")
	}
	if f.compare != nil {
		return a.sweepCompare(ctx, f)
	}
	if f.sweep != "" {
		return a.sweepStats(ctx, f)
	}
	if f.scorer != "" {
		return fmt.Errorf("--scorer goes with --sweep")
	}
	if f.by != "" && !slices.Contains(runstats.Groupings, f.by) {
		return fmt.Errorf("--by %q: expected agent, hash (the agent configuration) or snapshot (the snapshot hash: the same inputs)", f.by)
	}
	if f.json && f.csv {
		return fmt.Errorf("--json and --csv exclude each other")
	}
	st, err := a.openRead(ctx, readOnlyStore)
	if err != nil {
		return err
	}
	defer st.Close()
	runs, err := listRuns(ctx, st, &f.filterFlags)
	if err != nil {
		return err
	}
	var hashes map[string]string
	if f.by == runstats.ByHash {
		if hashes, err = runstats.AgentHashes(ctx, st, runs); err != nil {
			return err
		}
	}
	groups := runstats.Compute(runs, runstats.KeyBy(f.by, hashes))
	switch {
	case f.json:
		if groups == nil {
			groups = []*groupStats{}
		}
		return writeJSON(a.machineOut(), groups)
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
	fmt.Fprintf(w, "%s: %d runs, %d finished, %d unfinished", label, g.Runs, g.Finished, g.Unfinished)
	if g.Running > 0 {
		fmt.Fprintf(w, " (%d running)", g.Running)
	}
	if g.Awaiting > 0 {
		fmt.Fprintf(w, " (%d awaiting approval or delivery)", g.Awaiting)
	}
	fmt.Fprintln(w)
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
		fmt.Fprintf(w, "  tokens  %s", distText(g.Tokens, count))
		if g.TokensUnknownRuns > 0 {
			fmt.Fprintf(w, "  (%d runs with unknown tokens, left out)", g.TokensUnknownRuns)
		}
		fmt.Fprintf(w, "\n  cost    %s", distText(g.CostUSD, dollars))
		if g.CostUnknownRuns > 0 {
			fmt.Fprintf(w, "  (%d runs with unknown cost, left out)", g.CostUnknownRuns)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  spent   %s", spendText(g.Spend))
	if g.Unfinished > 0 {
		fmt.Fprintf(w, "; unfinished runs so far: %s", spendText(g.UnfinishedSpend))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  unknown outcome: %d model calls, %d actions\n", g.UnknownModelCalls, g.UnknownActions)
	if rc := g.Reconciled; rc.Total() > 0 {
		fmt.Fprintf(w, "  reconciled: %d actions in %d runs (%d completed): %d adopted, %d re-run, %d still unknown\n",
			rc.Total(), g.ReconciledRuns, g.ReconciledCompleted, rc.Adopted, rc.Rerun, rc.Unknown)
	}
	if g.Running > 0 {
		fmt.Fprintf(w, "  running: %s\n", someIDs(g.RunningRuns, "polyloop ls --unfinished lists them all, with their processes"))
	}
	if stopped := notRunning(g); len(stopped) > 0 {
		fmt.Fprintf(w, "  unfinished: %s\n", someIDs(stopped, "polyloop ls --unfinished lists them all"))
	}
}

// notRunning lists the group's unfinished runs no live process drives.
func notRunning(g *groupStats) []string {
	var ids []string
	for _, id := range g.UnfinishedRuns {
		if !slices.Contains(g.RunningRuns, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// distText is a distribution as text, "unknown" without values.
func distText(d dist, format func(*float64) string) string {
	if d.N == 0 {
		return "unknown"
	}
	return fmt.Sprintf("n %d  sum %s  p50 %s  p90 %s  max %s", d.N, format(d.Sum), format(d.P50), format(d.P90), format(d.Max))
}

// dollars is a cost statistic, "$0.12", "$0.000084", or "" when unknown.
func dollars(v *float64) string {
	if v == nil {
		return ""
	}
	return costtext.USD(*v, -1)
}

// spendText is what runs spent: "1200 tokens, $0.12", with a lower bound
// marked "≥" and a sum none of which is known "unknown".
func spendText(s runstats.Spend) string {
	cost := "cost unknown"
	if !s.CostUnknown || s.CostUSD != 0 {
		cost = dollars(&s.CostUSD)
		if s.CostUnknown {
			cost = "≥ " + cost
		}
	}
	return tokens(s.Tokens, s.TokensUnknown) + ", " + cost
}

// count is a statistic of counts (steps, tokens), or "" when unknown.
func count(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

// usd is a cost for machines (CSV) to 6 significant digits (sums of float
// costs carry noise such as 0.00020899999999999998), or "" when unknown.
func usd(v *float64) string {
	if v == nil {
		return ""
	}
	return strconv.FormatFloat(*v, 'g', 6, 64)
}

func writeStatsCSV(a *app, groups []*groupStats) error {
	w := csv.NewWriter(a.machineOut())
	head := []string{"group", "runs", "finished", "unfinished", "awaiting"}
	for _, r := range stopReasons {
		head = append(head, string(r))
	}
	for _, m := range []string{"steps", "tokens", "cost_usd"} {
		head = append(head, m+"_n", m+"_sum", m+"_p50", m+"_p90", m+"_max")
	}
	head = append(head, "tokens_unknown_runs", "cost_unknown_runs", "unknown_model_calls", "unknown_actions")
	for _, s := range []string{"spend", "unfinished_spend"} {
		head = append(head, s+"_runs", s+"_tokens", s+"_tokens_unknown", s+"_cost_usd", s+"_cost_unknown")
	}
	head = append(head, "unfinished_runs")
	if err := w.Write(head); err != nil {
		return err
	}
	for _, g := range groups {
		row := []string{g.Group, strconv.Itoa(g.Runs), strconv.Itoa(g.Finished), strconv.Itoa(g.Unfinished), strconv.Itoa(g.Awaiting)}
		for _, r := range stopReasons {
			row = append(row, strconv.Itoa(g.StopReasons[r]))
		}
		for _, d := range []dist{g.Steps, g.Tokens} {
			row = append(row, strconv.Itoa(d.N), count(d.Sum), count(d.P50), count(d.P90), count(d.Max))
		}
		c := g.CostUSD
		row = append(row, strconv.Itoa(c.N), usd(c.Sum), usd(c.P50), usd(c.P90), usd(c.Max))
		row = append(row, strconv.Itoa(g.TokensUnknownRuns), strconv.Itoa(g.CostUnknownRuns), strconv.Itoa(g.UnknownModelCalls),
			strconv.Itoa(g.UnknownActions))
		for _, s := range []runstats.Spend{g.Spend, g.UnfinishedSpend} {
			row = append(row, strconv.Itoa(s.Runs), strconv.FormatInt(s.Tokens, 10), strconv.FormatBool(s.TokensUnknown),
				usd(&s.CostUSD), strconv.FormatBool(s.CostUnknown))
		}
		row = append(row, strings.Join(g.UnfinishedRuns, " "))
		if err := w.Write(row); err != nil {
			return err
		}
	}
	w.Flush()
	return w.Error()
}
