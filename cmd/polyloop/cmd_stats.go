package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

type statsFlags struct {
	filterFlags
	by        string
	json, csv bool
}

func newStatsCmd(a *app) *cobra.Command {
	var f statsFlags
	c := &cobra.Command{
		Use:   "stats",
		Short: "Statistics over runs: stop reasons, steps/tokens/cost percentiles, unfinished runs",
		Long: `Statistics over the selected runs, optionally grouped by agent or snapshot hash:
the stop-reason distribution and the steps, tokens and cost percentiles (p50,
p90, max; nearest rank) over finished runs; runs whose cost is partly unknown;
model calls and actions of unknown outcome (intents without results); and the
unfinished runs, counted and listed by id — never dropped.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.stats(cmd.Context(), &f)
		},
	}
	f.register(c.Flags())
	c.Flags().StringVar(&f.by, "by", "", "group by agent or hash")
	c.Flags().BoolVar(&f.json, "json", false, "print the statistics as JSON")
	c.Flags().BoolVar(&f.csv, "csv", false, "print the statistics as CSV, one row per group")
	return c
}

func (a *app) stats(ctx context.Context, f *statsFlags) error {
	if f.by != "" && f.by != "agent" && f.by != "hash" {
		return fmt.Errorf("--by %q: expected agent or hash", f.by)
	}
	if f.json && f.csv {
		return fmt.Errorf("--json and --csv exclude each other")
	}
	st, err := openStore(ctx, a.store)
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
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(groups)
	case f.csv:
		return writeStatsCSV(a, groups)
	}
	if len(groups) == 0 {
		fmt.Fprintln(a.stdout, "no runs")
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
		fmt.Fprintf(w, "  steps   p50 %g  p90 %g  max %g\n", g.Steps.P50, g.Steps.P90, g.Steps.Max)
		fmt.Fprintf(w, "  tokens  p50 %g  p90 %g  max %g\n", g.Tokens.P50, g.Tokens.P90, g.Tokens.Max)
		fmt.Fprintf(w, "  cost    p50 $%.4f  p90 $%.4f  max $%.4f", g.CostUSD.P50, g.CostUSD.P90, g.CostUSD.Max)
		if g.CostUnknownRuns > 0 {
			fmt.Fprintf(w, "  (%d runs with unknown cost)", g.CostUnknownRuns)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  unknown outcome: %d model calls, %d actions\n", g.UnknownModelCalls, g.UnknownActions)
	if g.Unfinished > 0 {
		fmt.Fprintf(w, "  unfinished: %s\n", strings.Join(g.UnfinishedRuns, " "))
	}
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
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, g := range groups {
		row := []string{g.Group, strconv.Itoa(g.Runs), strconv.Itoa(g.Finished), strconv.Itoa(g.Unfinished)}
		for _, r := range stopReasons {
			row = append(row, strconv.Itoa(g.StopReasons[r]))
		}
		for _, d := range []dist{g.Steps, g.Tokens, g.CostUSD} {
			row = append(row, num(d.P50), num(d.P90), num(d.Max))
		}
		row = append(row, strconv.Itoa(g.CostUnknownRuns), strconv.Itoa(g.UnknownModelCalls), strconv.Itoa(g.UnknownActions),
			strings.Join(g.UnfinishedRuns, " "))
		if err := w.Write(row); err != nil {
			return err
		}
	}
	w.Flush()
	return w.Error()
}
