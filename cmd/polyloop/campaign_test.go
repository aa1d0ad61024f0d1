package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/faultcampaign"
	"github.com/polyloop/polyloop/sqlitestore"
)

var (
	campaignSeed = flag.Uint64("campaign.seed", 14, "the seed of the fault campaign")
	campaignRuns = flag.Int("campaign.runs", 1000, "the runs of the fault campaign")
)

// TestFaultCampaign performs the seeded fault campaign (package
// faultcampaign: model errors, env errors, budgets, adapter errors and
// panics, cancellations, store failures, never_replay and replay_safe
// actions in flight, batches; half of the interrupted runs resumed) on a
// SQLite store, then compares what its plans say, field by field, with
// each run's RunFinished totals (or its log's totals, unfinished), and with
// what polyloop stats --json, --csv and text and polyloop ls --json report,
// overall and by agent (one agent per fault class).
func TestFaultCampaign(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "campaign.db")
	st, err := sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	plans := faultcampaign.Generate(*campaignSeed, *campaignRuns)
	results := faultcampaign.Perform(context.Background(), st, plans, 16, func(done int) {
		if done%250 == 0 {
			t.Logf("campaign: %d of %d runs", done, len(plans))
		}
	})
	failed := 0
	for _, r := range results {
		if err := faultcampaign.CheckLog(context.Background(), st, r); err != nil {
			if failed++; failed <= 10 {
				t.Errorf("%s (%s, fault %+v, resumed %v): %v", r.Plan.RunID, r.Plan.Agent, r.Plan.Fault, r.Outcome.Resumed, err)
			}
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if failed > 0 {
		t.Fatalf("%d of %d runs differ from their plans (seed %d)", failed, len(results), *campaignSeed)
	}
	spec := "sqlite:" + path
	all := faultcampaign.ExpectStats(results, func(faultcampaign.Plan) string { return "all" })
	byAgent := faultcampaign.ExpectStats(results, func(p faultcampaign.Plan) string { return p.Agent })
	for _, tc := range []struct {
		by   []string
		want map[string]*faultcampaign.Group
	}{{nil, all}, {[]string{"--by", "agent"}, byAgent}} {
		checkStatsJSON(t, polyloopOut(t, append([]string{"--store", spec, "stats", "--json"}, tc.by...)...), tc.want)
		checkStatsCSV(t, polyloopOut(t, append([]string{"--store", spec, "stats", "--csv"}, tc.by...)...), tc.want)
		checkStatsText(t, polyloopOut(t, append([]string{"--store", spec, "stats"}, tc.by...)...), tc.want, len(tc.by) > 0)
	}
	checkLsJSON(t, polyloopOut(t, "--store", spec, "ls", "--json"), results)
}

func polyloopOut(t *testing.T, args ...string) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := execute(args, strings.NewReader(""), &stdout, &stderr); code != exitOK {
		t.Fatalf("polyloop %s: exit %d: %s", strings.Join(args, " "), code, stderr.String())
	}
	return stdout.Bytes()
}

// expectedFields flattens a group as stats --csv names its columns, with
// fmtCost for costs and fmtCount for the other statistics (nil: empty).
func expectedFields(g *faultcampaign.Group, fmtCount, fmtCost func(float64) string) map[string]string {
	m := map[string]string{"runs": strconv.Itoa(g.Runs), "finished": strconv.Itoa(g.Finished), "unfinished": strconv.Itoa(g.Unfinished),
		"awaiting": strconv.Itoa(g.Awaiting), "tokens_unknown_runs": strconv.Itoa(g.TokensUnknownRuns), "cost_unknown_runs": strconv.Itoa(g.CostUnknownRuns),
		"unknown_model_calls": strconv.Itoa(g.UnknownModelCalls), "unknown_actions": strconv.Itoa(g.UnknownActions),
		"unfinished_runs": strings.Join(g.UnfinishedRuns, " ")}
	for _, r := range stopReasons {
		m[string(r)] = strconv.Itoa(g.StopReasons[r])
	}
	opt := func(v *float64, f func(float64) string) string {
		if v == nil {
			return ""
		}
		return f(*v)
	}
	for name, d := range map[string]faultcampaign.Dist{"steps": g.Steps, "tokens": g.Tokens, "cost_usd": g.CostUSD} {
		f := fmtCount
		if name == "cost_usd" {
			f = fmtCost
		}
		m[name+"_n"] = strconv.Itoa(d.N)
		m[name+"_sum"], m[name+"_p50"], m[name+"_p90"], m[name+"_max"] = opt(d.Sum, f), opt(d.P50, f), opt(d.P90, f), opt(d.Max, f)
	}
	for name, s := range map[string]faultcampaign.Spend{"spend": g.Spend, "unfinished_spend": g.UnfinishedSpend} {
		m[name+"_runs"], m[name+"_tokens"] = strconv.Itoa(s.Runs), strconv.FormatInt(s.Tokens, 10)
		m[name+"_tokens_unknown"], m[name+"_cost_usd"] = strconv.FormatBool(s.TokensUnknown), fmtCost(s.CostUSD)
		m[name+"_cost_unknown"] = strconv.FormatBool(s.CostUnknown)
	}
	return m
}

func exactFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
func countText(v float64) string  { return strconv.FormatFloat(v, 'f', -1, 64) }
func sixDigits(v float64) string  { return strconv.FormatFloat(v, 'g', 6, 64) }

// compareFields reports each field in which got and want differ.
func compareFields(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[k]; !ok {
			t.Errorf("%s: no %s (want %q)", what, k, want[k])
		} else if g != want[k] {
			t.Errorf("%s: %s is %q, want %q", what, k, g, want[k])
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: %s, which the campaign does not expect", what, k)
		}
	}
}

type statsDist struct {
	N                  int
	Sum, P50, P90, Max *float64
}

type statsSpend struct {
	Runs          int     `json:"runs"`
	Tokens        int64   `json:"tokens"`
	TokensUnknown bool    `json:"tokens_unknown"`
	CostUSD       float64 `json:"cost_usd"`
	CostUnknown   bool    `json:"cost_unknown"`
}

// statsGroup is a group of stats --json, decoded strictly: a field the
// test does not know fails it.
type statsGroup struct {
	Group             string                      `json:"group"`
	Runs              int                         `json:"runs"`
	Finished          int                         `json:"finished"`
	Unfinished        int                         `json:"unfinished"`
	Awaiting          int                         `json:"awaiting"`
	StopReasons       map[polyloop.StopReason]int `json:"stop_reasons"`
	Steps             statsDist                   `json:"steps"`
	Tokens            statsDist                   `json:"tokens"`
	TokensUnknownRuns int                         `json:"tokens_unknown_runs"`
	CostUSD           statsDist                   `json:"cost_usd"`
	CostUnknownRuns   int                         `json:"cost_unknown_runs"`
	UnknownModelCalls int                         `json:"unknown_model_calls"`
	UnknownActions    int                         `json:"unknown_actions"`
	// The campaign's executors reconcile nothing: these stay zero
	// (checkStatsJSON).
	Reconciled          polyloop.ReconciledCounts `json:"reconciled"`
	ReconciledRuns      int                       `json:"reconciled_runs"`
	ReconciledCompleted int                       `json:"reconciled_completed"`
	Spend               statsSpend                `json:"spend"`
	UnfinishedSpend     statsSpend                `json:"unfinished_spend"`
	UnfinishedRuns      []string                  `json:"unfinished_runs"`
}

func (g statsGroup) fields() map[string]string {
	m := map[string]string{"runs": strconv.Itoa(g.Runs), "finished": strconv.Itoa(g.Finished), "unfinished": strconv.Itoa(g.Unfinished),
		"awaiting": strconv.Itoa(g.Awaiting), "tokens_unknown_runs": strconv.Itoa(g.TokensUnknownRuns), "cost_unknown_runs": strconv.Itoa(g.CostUnknownRuns),
		"unknown_model_calls": strconv.Itoa(g.UnknownModelCalls), "unknown_actions": strconv.Itoa(g.UnknownActions),
		"unfinished_runs": strings.Join(slices.Sorted(slices.Values(g.UnfinishedRuns)), " ")}
	for r, n := range g.StopReasons {
		m[string(r)] = strconv.Itoa(n)
	}
	opt := func(v *float64) string {
		if v == nil {
			return ""
		}
		return exactFloat(*v)
	}
	for name, d := range map[string]statsDist{"steps": g.Steps, "tokens": g.Tokens, "cost_usd": g.CostUSD} {
		m[name+"_n"] = strconv.Itoa(d.N)
		m[name+"_sum"], m[name+"_p50"], m[name+"_p90"], m[name+"_max"] = opt(d.Sum), opt(d.P50), opt(d.P90), opt(d.Max)
	}
	for name, s := range map[string]statsSpend{"spend": g.Spend, "unfinished_spend": g.UnfinishedSpend} {
		m[name+"_runs"], m[name+"_tokens"] = strconv.Itoa(s.Runs), strconv.FormatInt(s.Tokens, 10)
		m[name+"_tokens_unknown"], m[name+"_cost_usd"] = strconv.FormatBool(s.TokensUnknown), exactFloat(s.CostUSD)
		m[name+"_cost_unknown"] = strconv.FormatBool(s.CostUnknown)
	}
	return m
}

func checkStatsJSON(t *testing.T, out []byte, want map[string]*faultcampaign.Group) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	var groups []statsGroup
	if err := dec.Decode(&groups); err != nil {
		t.Fatalf("stats --json: %v", err)
	}
	if len(groups) != len(want) {
		t.Errorf("stats --json: %d groups, want %d", len(groups), len(want))
	}
	for _, g := range groups {
		w, ok := want[g.Group]
		if !ok {
			t.Errorf("stats --json: group %q, which the campaign does not have", g.Group)
			continue
		}
		compareFields(t, "stats --json, group "+g.Group, g.fields(), expectedFields(w, exactFloat, exactFloat))
	}
}

func checkStatsCSV(t *testing.T, out []byte, want map[string]*faultcampaign.Group) {
	t.Helper()
	rows, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil || len(rows) != len(want)+1 {
		t.Fatalf("stats --csv: %d rows, %v; want a header and %d groups", len(rows), err, len(want))
	}
	head := rows[0]
	for _, row := range rows[1:] {
		got := map[string]string{}
		for i, h := range head[1:] {
			got[h] = row[i+1]
		}
		got["unfinished_runs"] = strings.Join(slices.Sorted(slices.Values(strings.Fields(got["unfinished_runs"]))), " ")
		w, ok := want[row[0]]
		if !ok {
			t.Errorf("stats --csv: group %q, which the campaign does not have", row[0])
			continue
		}
		compareFields(t, "stats --csv, group "+row[0], got, expectedFields(w, countText, sixDigits))
	}
}

// checkStatsText compares each group's block of the text form with the
// lines its statistics must print.
func checkStatsText(t *testing.T, out []byte, want map[string]*faultcampaign.Group, byAgent bool) {
	t.Helper()
	blocks := map[string][]string{}
	var cur string
	for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		if !strings.HasPrefix(line, " ") {
			cur, _, _ = strings.Cut(line, ":")
			cur = strings.TrimPrefix(cur, "agent ")
		}
		if strings.HasPrefix(line, "  unfinished: ") {
			line = unfinishedLine(t, line, want[cur])
		}
		blocks[cur] = append(blocks[cur], line)
	}
	if len(blocks) != len(want) {
		t.Errorf("stats text: %d groups, want %d", len(blocks), len(want))
	}
	for name, g := range want {
		label := name
		if byAgent {
			label = "agent " + name
		}
		wantLines := textLines(label, g)
		if got := blocks[name]; !slices.Equal(got, wantLines) {
			t.Errorf("stats text, group %s:\n%s\nwant:\n%s", name, strings.Join(got, "\n"), strings.Join(wantLines, "\n"))
		}
	}
}

// textLines are the lines polyloop stats prints for a group, by its
// documented format.
func textLines(label string, g *faultcampaign.Group) []string {
	lines := []string{fmt.Sprintf("%s: %d runs, %d finished, %d unfinished", label, g.Runs, g.Finished, g.Unfinished)}
	var reasons []string
	for _, r := range stopReasons {
		if n := g.StopReasons[r]; n > 0 {
			reasons = append(reasons, fmt.Sprintf("%s %d (%.1f%%)", r, n, 100*float64(n)/float64(g.Finished)))
		}
	}
	if len(reasons) > 0 {
		lines = append(lines, "  stop reasons: "+strings.Join(reasons, ", "))
	}
	distLine := func(d faultcampaign.Dist, f func(float64) string) string {
		if d.N == 0 {
			return "unknown"
		}
		return fmt.Sprintf("n %d  sum %s  p50 %s  p90 %s  max %s", d.N, f(*d.Sum), f(*d.P50), f(*d.P90), f(*d.Max))
	}
	leftOut := func(n int, what string) string {
		if n == 0 {
			return ""
		}
		return fmt.Sprintf("  (%d runs with unknown %s, left out)", n, what)
	}
	if g.Finished > 0 {
		lines = append(lines, "  steps   "+distLine(g.Steps, countText),
			"  tokens  "+distLine(g.Tokens, countText)+leftOut(g.TokensUnknownRuns, "tokens"),
			"  cost    "+distLine(g.CostUSD, func(v float64) string { return "$" + sixDigits(v) })+leftOut(g.CostUnknownRuns, "cost"))
	}
	spent := "  spent   " + spendLine(g.Spend)
	if g.Unfinished > 0 {
		spent += "; unfinished runs so far: " + spendLine(g.UnfinishedSpend)
	}
	lines = append(lines, spent, fmt.Sprintf("  unknown outcome: %d model calls, %d actions", g.UnknownModelCalls, g.UnknownActions))
	if g.Unfinished > 0 {
		lines = append(lines, "  unfinished: "+unfinishedText(g.UnfinishedRuns))
	}
	return lines
}

// spendLine is a spend as the text form says it: a sum with an unknown
// part as a lower bound (≥), one of which nothing is known as unknown.
func spendLine(s faultcampaign.Spend) string {
	tokens := strconv.FormatInt(s.Tokens, 10) + " tokens"
	switch {
	case s.TokensUnknown && s.Tokens == 0:
		tokens = "tokens unknown"
	case s.TokensUnknown:
		tokens = "≥ " + tokens
	}
	cost := "$" + sixDigits(s.CostUSD)
	switch {
	case s.CostUnknown && s.CostUSD == 0:
		cost = "cost unknown"
	case s.CostUnknown:
		cost = "≥ " + cost
	}
	return tokens + ", " + cost
}

// checkLsJSON compares each run of ls --json with its expectation.
func checkLsJSON(t *testing.T, out []byte, results []faultcampaign.Result) {
	t.Helper()
	var runs []polyloop.RunSummary
	if err := json.Unmarshal(out, &runs); err != nil {
		t.Fatalf("ls --json: %v", err)
	}
	byID := map[string]polyloop.RunSummary{}
	for _, r := range runs {
		byID[r.RunID] = r
	}
	if len(runs) != len(results) {
		t.Errorf("ls --json: %d runs, want %d", len(runs), len(results))
	}
	for _, r := range results {
		s, ok := byID[r.Plan.RunID]
		want := r.Expected
		switch {
		case !ok:
			t.Errorf("ls --json: no run %s", r.Plan.RunID)
		case s.Agent != r.Plan.Agent || s.Finished != want.Finished || s.StopReason != want.StopReason:
			t.Errorf("ls --json: %s: agent %s, finished %v, stop %q; want %s, %v, %q", s.RunID, s.Agent, s.Finished, s.StopReason, r.Plan.Agent, want.Finished, want.StopReason)
		case s.Totals == nil:
			t.Errorf("ls --json: %s has no totals", s.RunID)
		default:
			if err := faultcampaign.SameTotals(*s.Totals, want.Totals); err != nil {
				t.Errorf("ls --json: %s: totals %v", s.RunID, err)
			}
		}
	}
}

// unfinishedText is a group's unfinished runs as the canonical line of
// unfinishedLine: the ids sorted when stats lists them all, "N runs, the
// first listed" when it summarises them.
func unfinishedText(ids []string) string {
	if len(ids) <= listedIDs {
		return strings.Join(slices.Sorted(slices.Values(ids)), " ")
	}
	return fmt.Sprintf("%d runs, the first listed", len(ids))
}

// unfinishedLine checks an "unfinished:" line of stats against the
// group's unfinished runs and returns its canonical form: the ids (in
// listing order) sorted, or, summarised, "N runs, the first listed" once
// the ids shown are the group's and the count adds up.
func unfinishedLine(t *testing.T, line string, g *faultcampaign.Group) string {
	t.Helper()
	text := strings.TrimPrefix(line, "  unfinished: ")
	count, rest, summarised := strings.Cut(text, ": ")
	if !summarised {
		return "  unfinished: " + strings.Join(slices.Sorted(slices.Values(strings.Fields(text))), " ")
	}
	shown, more, _ := strings.Cut(rest, " … and ")
	n, _ := strconv.Atoi(count)
	m, _ := strconv.Atoi(strings.Fields(more + " x")[0])
	ids := strings.Fields(shown)
	if g == nil || len(ids) != listedIDs || n != len(ids)+m || !strings.Contains(more, "polyloop ls --unfinished lists them all") {
		t.Errorf("stats text: a summarised list %q", line)
	}
	for _, id := range ids {
		if g != nil && !slices.Contains(g.UnfinishedRuns, id) {
			t.Errorf("stats text: %s is not an unfinished run of the group", id)
		}
	}
	return fmt.Sprintf("  unfinished: %d runs, the first listed", n)
}
