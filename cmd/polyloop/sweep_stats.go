package main

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/polyloop/polyloop/internal/runstats"
	"github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/sweepqueue"
)

// sweepStats is polyloop stats --sweep.
func (a *app) sweepStats(ctx context.Context, f *statsFlags) error {
	if ff := f.filterFlags; ff != (filterFlags{}) {
		return fmt.Errorf("--sweep takes no run filters (--agent, --since, ...): its statistics cover the sweep; --by agent, hash (agent configuration), task or epoch groups them")
	}
	ss, closeStore, err := a.openSweeps(ctx, f.sweep)
	if err != nil {
		return err
	}
	defer closeStore()
	stats, err := sweep.ComputeStats(ctx, ss, f.sweep, sweep.StatsOptions{By: f.by, Scorer: f.scorer})
	if err != nil {
		return a.sweepNotFound(f.sweep, err)
	}
	problems, err := a.queueProblems(ctx, f.sweep)
	if err != nil {
		return err
	}
	switch {
	case f.json:
		return writeJSON(a.machineOut(), struct {
			*sweep.Stats
			Queue *queueProblems `json:"queue,omitempty"`
		}{stats, problems})
	case f.csv:
		return writeSweepCSV(a.machineOut(), stats)
	}
	for _, g := range stats.Groups {
		writeSweepGroup(a.stdout, stats, g)
	}
	if stats.LeftOut > 0 {
		fmt.Fprintf(a.stdout, "left out: %d runs of agents the sweep no longer has (a changed agent file) or of epochs beyond its %d\n", stats.LeftOut, stats.Epochs)
	}
	problems.write(a.stdout)
	return nil
}

// queueProblems are the jobs of a sweep's queue that need a person or
// wait for a retry: on a PostgreSQL store whose database holds a sweep
// queue (polyloop sweep --queue), else nil.
type queueProblems struct {
	Retrying  []sweepqueue.Job `json:"retrying"`
	Cancelled []sweepqueue.Job `json:"cancelled"`
	Discarded []sweepqueue.Job `json:"discarded"`
}

func (a *app) queueProblems(ctx context.Context, name string) (*queueProblems, error) {
	if !strings.HasPrefix(a.store, "postgres://") && !strings.HasPrefix(a.store, "postgresql://") {
		return nil, nil
	}
	q, err := sweepqueue.OpenExisting(ctx, a.store, nil)
	if err != nil || q == nil {
		return nil, err
	}
	defer q.Close()
	st, err := q.Status(ctx, sweepqueue.StatusOptions{Sweep: name})
	if err != nil {
		return nil, err
	}
	if len(st.Retrying)+len(st.Cancelled)+len(st.Discarded) == 0 {
		return nil, nil
	}
	return &queueProblems{Retrying: st.Retrying, Cancelled: st.Cancelled, Discarded: st.Discarded}, nil
}

// write prints the problems, each job with its last error.
func (p *queueProblems) write(w io.Writer) {
	if p == nil {
		return
	}
	for _, l := range []struct {
		title string
		jobs  []sweepqueue.Job
	}{{"cancelled for a person", p.Cancelled}, {"discarded (every attempt failed)", p.Discarded}, {"waiting for a retry", p.Retrying}} {
		if len(l.jobs) == 0 {
			continue
		}
		fmt.Fprintf(w, "queue: %d jobs %s (polyloop workers --queue shows the queue):\n", len(l.jobs), l.title)
		for _, j := range l.jobs {
			fmt.Fprintf(w, "  run %s, attempt %d: %s\n", j.RunID, j.Attempt, j.Error)
		}
	}
}

// label is a group's name with its grouping.
func label(by, group string) string {
	if by == "" {
		return group
	}
	return by + " " + group
}

func writeSweepGroup(w io.Writer, st *sweep.Stats, g *sweep.GroupStats) {
	fmt.Fprintf(w, "%s: %d outcomes, %d settled, %d unsettled\n", label(st.By, g.Group), g.Outcomes, g.Settled, len(g.Unsettled))
	if g.Settled > 0 {
		fmt.Fprintf(w, "  outcomes by stop reason: %s\n", percentages(g.OutcomeStopReasons, g.Settled))
		fmt.Fprintf(w, "  attempts per outcome: %s\n", attemptsText(g.Attempts, " | "))
	}
	fmt.Fprintf(w, "  accuracy (%s): %s; %d unscored\n", st.Scorer, accuracyText(g.Accuracy), g.Unscored)
	for _, f := range g.ScorerFailures {
		fmt.Fprintf(w, "  scorer %s failed on %d outcomes; the first (run %s): %s\n", f.Scorer, f.Outcomes, f.FirstRun, f.FirstError)
	}
	for _, l := range []struct {
		name string
		ps   []sweep.PassAtK
	}{{"pass@", g.PassAtK}, {"pass^", g.PassHatK}} {
		if len(l.ps) == 0 {
			continue
		}
		var parts []string
		for _, p := range l.ps {
			parts = append(parts, fmt.Sprintf("%s%d %s (%d agent-task pairs)", l.name, p.K, withSE(p.Mean, p.SE), p.Pairs))
		}
		fmt.Fprintf(w, "  %s\n", strings.Join(parts, ", "))
	}
	r := g.Runs
	fmt.Fprintf(w, "  runs (every attempt): %d, %d finished, %d unfinished", r.Runs, r.Finished, r.Unfinished)
	if stops := percentages(r.StopReasons, r.Finished); stops != "" {
		fmt.Fprintf(w, "; %s", stops)
	}
	fmt.Fprintln(w)
	if r.Finished > 0 {
		fmt.Fprintf(w, "  steps   %s\n", distText(r.Steps, count))
		fmt.Fprintf(w, "  tokens  %s\n", distText(r.Tokens, count))
		fmt.Fprintf(w, "  cost    %s", distText(r.CostUSD, dollars))
		if r.CostUnknownRuns > 0 {
			fmt.Fprintf(w, "  (%d runs with unknown cost, left out)", r.CostUnknownRuns)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  sums: %s, %s\n", sumText(tokens(g.TokensSum, g.TokensUnknownRuns > 0), g.TokensUnknownRuns, "tokens"),
		sumText(costLong.cost(g.CostSum, g.CostUnknownRuns > 0), g.CostUnknownRuns, "cost"))
	fmt.Fprintf(w, "  unknown outcome: %d model calls, %d actions\n", r.UnknownModelCalls, r.UnknownActions)
	every := "polyloop stats --sweep " + st.Sweep + " --json lists them all"
	if len(g.Unsettled) > 0 {
		fmt.Fprintf(w, "  unsettled: %s\n", someIDs(g.Unsettled, every))
	}
	if len(r.UnfinishedRuns) > 0 {
		fmt.Fprintf(w, "  unfinished runs: %s\n", someIDs(r.UnfinishedRuns, every))
	}
}

// sumText is a sum as tokens or costLong says it, and, when it is a lower
// bound ("≥ "), how many runs it is a lower bound for. A sum none of which
// is known ("cost unknown") is no bound of anything: it says so and no
// more.
func sumText(sum string, unknownRuns int, what string) string {
	if !strings.HasPrefix(sum, "≥ ") {
		return sum
	}
	sum = strings.TrimSuffix(sum, costLong.partly)
	return fmt.Sprintf("%s (a lower bound: %d runs with %s partly unknown)", sum, unknownRuns, what)
}

func percentages[K ~string](m map[K]int, total int) string {
	var parts []string
	for _, r := range runstats.StopReasons {
		if n := m[K(r)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d (%.1f%%)", r, n, 100*float64(n)/float64(total)))
		}
	}
	return strings.Join(parts, ", ")
}

// attemptsText is "completed 1:580 2:17 | llm_error 3:3".
func attemptsText[K ~string](m map[K]map[string]int, sep string) string {
	var parts []string
	for _, r := range runstats.StopReasons {
		byN := m[K(r)]
		if len(byN) == 0 {
			continue
		}
		parts = append(parts, string(r)+" "+attemptCounts(byN))
	}
	return strings.Join(parts, sep)
}

// attemptCounts is "1:580 2:17", by number of attempts.
func attemptCounts(byN map[string]int) string {
	keys := make([]string, 0, len(byN))
	for k := range byN {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { a, _ := strconv.Atoi(keys[i]); b, _ := strconv.Atoi(keys[j]); return a < b })
	var out []string
	for _, k := range keys {
		out = append(out, k+":"+strconv.Itoa(byN[k]))
	}
	return strings.Join(out, " ")
}

func accuracyText(e *runstats.Estimate) string {
	if e == nil {
		return "no scored outcome"
	}
	if e.SE == nil {
		return fmt.Sprintf("%.3f over %d scored outcomes of %d task (one task: no interval)", e.Mean, e.N, e.Clusters)
	}
	return fmt.Sprintf("%.3f ± %.3f (SE clustered by task), 95%% interval [%.3f, %.3f] over %d scored outcomes, %d tasks",
		e.Mean, *e.SE, *e.Low, *e.High, e.N, e.Clusters)
}

func withSE(mean float64, se *float64) string {
	if se == nil {
		return fmt.Sprintf("%.3f", mean)
	}
	return fmt.Sprintf("%.3f ± %.3f", mean, *se)
}

// writeSweepTable is the summary at the end of a sweep: one row per group.
func writeSweepTable(w io.Writer, st *sweep.Stats) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := []string{"AGENT", "OUTCOMES", "SETTLED", "STOP REASONS", "ACCURACY (" + strings.ToUpper(orNone(st.Scorer)) + ")", "95% INTERVAL"}
	if st.Epochs > 1 {
		head = append(head, "PASS@1", fmt.Sprintf("PASS@%d", st.Epochs), fmt.Sprintf("PASS^%d", st.Epochs))
	}
	head = append(head, "ATTEMPTS", "RUNS", "TOKENS", "COST")
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, g := range st.Groups {
		row := []string{g.Group, strconv.Itoa(g.Outcomes), strconv.Itoa(g.Settled), stopsShort(g.OutcomeStopReasons)}
		if a := g.Accuracy; a != nil {
			row = append(row, withSE(a.Mean, a.SE)+fmt.Sprintf(" (n=%d)", a.N), interval(a))
		} else {
			row = append(row, "-", "-")
		}
		if st.Epochs > 1 {
			row = append(row, passAt(g.PassAtK, 1), passAt(g.PassAtK, st.Epochs), passAt(g.PassHatK, st.Epochs))
		}
		row = append(row, attemptCounts(mergeAttempts(g.Attempts)), strconv.Itoa(g.Runs.Runs),
			tokenCell(g.TokensSum, g.TokensUnknownRuns > 0), costShort.cost(g.CostSum, g.CostUnknownRuns > 0))
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if st.LeftOut > 0 {
		fmt.Fprintf(w, "(%d runs of earlier agents or epochs left out)\n", st.LeftOut)
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "no scorer"
	}
	return s
}

func stopsShort[K ~string](m map[K]int) string {
	var parts []string
	for _, r := range runstats.StopReasons {
		if n := m[K(r)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", r, n))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func interval(e *runstats.Estimate) string {
	if e.Low == nil {
		return "-"
	}
	return fmt.Sprintf("[%.3f, %.3f]", *e.Low, *e.High)
}

func passAt(ps []sweep.PassAtK, k int) string {
	if i := slices.IndexFunc(ps, func(p sweep.PassAtK) bool { return p.K == k }); i >= 0 {
		return fmt.Sprintf("%.3f", ps[i].Mean)
	}
	return "-"
}

func mergeAttempts[K comparable](m map[K]map[string]int) map[string]int {
	out := map[string]int{}
	for _, byN := range m {
		for k, n := range byN {
			out[k] += n
		}
	}
	return out
}

// writeSweepCSV prints one row per group with every number of the JSON
// output, at full precision.
func writeSweepCSV(w io.Writer, st *sweep.Stats) error {
	cw := csv.NewWriter(w)
	head := []string{"group", "outcomes", "settled", "unsettled"}
	for _, r := range runstats.StopReasons {
		head = append(head, "outcomes_"+string(r))
	}
	head = append(head, "scorer", "scored", "unscored", "accuracy", "accuracy_se", "accuracy_low", "accuracy_high", "accuracy_n", "accuracy_tasks")
	for _, name := range []string{"pass_at_", "pass_hat_"} {
		for k := 1; k <= st.Epochs && st.Epochs > 1; k++ {
			head = append(head, fmt.Sprintf("%s%d", name, k), fmt.Sprintf("%s%d_se", name, k), fmt.Sprintf("%s%d_pairs", name, k))
		}
	}
	head = append(head, "attempts", "runs", "runs_finished", "runs_unfinished")
	for _, r := range runstats.StopReasons {
		head = append(head, "runs_"+string(r))
	}
	for _, m := range []string{"steps", "tokens", "cost_usd"} {
		head = append(head, m+"_p50", m+"_p90", m+"_max")
	}
	head = append(head, "tokens_sum", "tokens_unknown_runs", "cost_usd_sum", "cost_unknown_runs", "unknown_model_calls", "unknown_actions",
		"unsettled_outcomes", "unfinished_runs", "scorer_failures")
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, g := range st.Groups {
		if err := cw.Write(sweepCSVRow(st, g)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func sweepCSVRow(st *sweep.Stats, g *sweep.GroupStats) []string {
	num := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	opt := func(v *float64) string {
		if v == nil {
			return ""
		}
		return num(*v)
	}
	row := []string{g.Group, strconv.Itoa(g.Outcomes), strconv.Itoa(g.Settled), strconv.Itoa(len(g.Unsettled))}
	for _, r := range runstats.StopReasons {
		row = append(row, strconv.Itoa(g.OutcomeStopReasons[r]))
	}
	row = append(row, st.Scorer, strconv.Itoa(g.Scored), strconv.Itoa(g.Unscored))
	if a := g.Accuracy; a != nil {
		row = append(row, num(a.Mean), opt(a.SE), opt(a.Low), opt(a.High), strconv.Itoa(a.N), strconv.Itoa(a.Clusters))
	} else {
		row = append(row, "", "", "", "", "0", "0")
	}
	for _, ps := range [][]sweep.PassAtK{g.PassAtK, g.PassHatK} {
		for k := 1; k <= st.Epochs && st.Epochs > 1; k++ {
			if i := slices.IndexFunc(ps, func(p sweep.PassAtK) bool { return p.K == k }); i >= 0 {
				p := ps[i]
				row = append(row, num(p.Mean), opt(p.SE), strconv.Itoa(p.Pairs))
			} else {
				row = append(row, "", "", "0")
			}
		}
	}
	r := g.Runs
	row = append(row, attemptsText(g.Attempts, "; "), strconv.Itoa(r.Runs), strconv.Itoa(r.Finished), strconv.Itoa(r.Unfinished))
	for _, reason := range runstats.StopReasons {
		row = append(row, strconv.Itoa(r.StopReasons[reason]))
	}
	for _, d := range []runstats.Dist{r.Steps, r.Tokens, r.CostUSD} {
		row = append(row, opt(d.P50), opt(d.P90), opt(d.Max))
	}
	return append(row, strconv.FormatInt(g.TokensSum, 10), strconv.Itoa(g.TokensUnknownRuns), num(g.CostSum), strconv.Itoa(g.CostUnknownRuns),
		strconv.Itoa(r.UnknownModelCalls), strconv.Itoa(r.UnknownActions), strings.Join(g.Unsettled, " "), strings.Join(r.UnfinishedRuns, " "),
		failureCounts(g.ScorerFailures))
}

// failureCounts is "exact:10 near:2", the outcomes each scorer failed on.
func failureCounts(fs []sweep.ScorerFailure) string {
	var parts []string
	for _, f := range fs {
		parts = append(parts, f.Scorer+":"+strconv.Itoa(f.Outcomes))
	}
	return strings.Join(parts, " ")
}

// listedIDs is how many ids a text list shows before it summarises.
const listedIDs = 5

// someIDs lists ids, or, when there are more than listedIDs, the first of
// them, how many more, and how to list them all.
func someIDs(ids []string, every string) string {
	if len(ids) <= listedIDs {
		return strings.Join(ids, " ")
	}
	return fmt.Sprintf("%d: %s … and %d more (%s)", len(ids), strings.Join(ids[:listedIDs], " "), len(ids)-listedIDs, every)
}
