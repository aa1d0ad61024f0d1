package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/polyloop/polyloop/sweep"
)

// sweepCompare is polyloop stats --sweep NAME --compare A B.
func (a *app) sweepCompare(ctx context.Context, f *statsFlags) error {
	if f.by != "" {
		return fmt.Errorf("--compare pairs by task and epoch: it takes no --by")
	}
	if ff := f.filterFlags; ff != (filterFlags{}) {
		return fmt.Errorf("--compare takes no run filters (--agent, --since, ...)")
	}
	ss, closeStore, err := a.openSweeps(ctx, f.sweep)
	if err != nil {
		return err
	}
	defer closeStore()
	c, err := sweep.Compare(ctx, ss, f.sweep, f.compare[0], f.compare[1], f.scorer)
	if err != nil {
		return a.sweepNotFound(f.sweep, err)
	}
	switch {
	case f.json:
		return writeJSON(a.machineOut(), c)
	case f.csv:
		return writeCompareCSV(a.machineOut(), c)
	}
	return writeCompareText(a.stdout, c)
}

func writeCompareText(w io.Writer, c *sweep.Comparison) error {
	fmt.Fprintf(w, "%s − %s on %s (sweep %s): %d pairs (the same task and epoch, both scored) over %d tasks; unpaired: %d of %s, %d of %s\n",
		c.A, c.B, c.Scorer, c.Sweep, c.Pairs, len(c.Tasks), c.UnpairedA, c.A, c.UnpairedB, c.B)
	writeScorerFailures(w, c)
	if d := c.Difference; d != nil {
		fmt.Fprintf(w, "  mean over the pairs: %s %.3f, %s %.3f\n", c.A, c.MeanA, c.B, c.MeanB)
		fmt.Fprintf(w, "  mean difference: %s\n", differenceText(d.Mean, d.SE, d.Low, d.High))
		fmt.Fprintf(w, "  tasks: %s wins %d, %s wins %d, %d ties\n", c.A, c.WinsA, c.B, c.WinsB, c.Ties)
	}
	for _, p := range []struct {
		name string
		pass sweep.AgentPass
	}{{c.A, c.PassA}, {c.B, c.PassB}} {
		if parts := passParts(p.pass); len(parts) > 0 {
			fmt.Fprintf(w, "  %s: %s\n", p.name, strings.Join(parts, ", "))
		}
	}
	if len(c.Tasks) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  TASK\tPAIRS\t%s\t%s\tDIFFERENCE\n", strings.ToUpper(c.A), strings.ToUpper(c.B))
	for _, t := range c.Tasks {
		fmt.Fprintf(tw, "  %s\t%d\t%.3f\t%.3f\t%+.3f\n", t.Task, t.Pairs, t.MeanA, t.MeanB, t.Difference)
	}
	return tw.Flush()
}

// differenceText is "0.375 ± 0.143 (SE clustered by task), 95% interval
// [0.094, 0.656]".
func differenceText(mean float64, se, low, high *float64) string {
	if se == nil {
		return fmt.Sprintf("%+.3f (one task: no interval)", mean)
	}
	return fmt.Sprintf("%+.3f ± %.3f (SE clustered by task), 95%% interval [%+.3f, %+.3f]", mean, *se, *low, *high)
}

// passParts are "pass@1 0.500", ..., "pass^2 0.250", ...
func passParts(p sweep.AgentPass) []string {
	var parts []string
	for _, l := range []struct {
		name string
		ps   []sweep.PassAtK
	}{{"pass@", p.PassAtK}, {"pass^", p.PassHatK}} {
		for _, e := range l.ps {
			parts = append(parts, fmt.Sprintf("%s%d %s", l.name, e.K, withSE(e.Mean, e.SE)))
		}
	}
	return parts
}

// writeCompareCSV prints one row per task and a first row "all": the
// mean difference with its standard error and interval, at full
// precision.
func writeCompareCSV(w io.Writer, c *sweep.Comparison) error {
	cw := csv.NewWriter(w)
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	opt := func(v *float64) string {
		if v == nil {
			return ""
		}
		return num(*v)
	}
	rows := [][]string{{"task", "a", "b", "scorer", "pairs", "mean_a", "mean_b", "difference", "difference_se", "difference_low", "difference_high",
		"wins_a", "wins_b", "ties", "unpaired_a", "unpaired_b"}}
	all := []string{"all", c.A, c.B, c.Scorer, strconv.Itoa(c.Pairs), num(c.MeanA), num(c.MeanB)}
	if d := c.Difference; d != nil {
		all = append(all, num(d.Mean), opt(d.SE), opt(d.Low), opt(d.High))
	} else {
		all = append(all, "", "", "", "")
	}
	rows = append(rows, append(all, strconv.Itoa(c.WinsA), strconv.Itoa(c.WinsB), strconv.Itoa(c.Ties), strconv.Itoa(c.UnpairedA), strconv.Itoa(c.UnpairedB)))
	for _, t := range c.Tasks {
		rows = append(rows, []string{t.Task, c.A, c.B, c.Scorer, strconv.Itoa(t.Pairs), num(t.MeanA), num(t.MeanB), num(t.Difference),
			"", "", "", "", "", "", "", ""})
	}
	if err := cw.WriteAll(rows); err != nil {
		return err
	}
	return cw.Error()
}

// writeScorerFailures says how many outcomes the comparison's scorer
// failed on, and the first error: when no pair is left, as the reason.
func writeScorerFailures(w io.Writer, c *sweep.Comparison) {
	f := c.ScorerFailures
	switch {
	case f.Outcomes == 0:
	case c.Pairs == 0:
		fmt.Fprintf(w, "  0 pairs: %d outcomes of scorer %s failed: %s (the first, run %s)\n", f.Outcomes, c.Scorer, f.FirstError, f.FirstRun)
	default:
		fmt.Fprintf(w, "  %d outcomes of scorer %s failed (left out, unscored); the first (run %s): %s\n", f.Outcomes, c.Scorer, f.FirstRun, f.FirstError)
	}
}
