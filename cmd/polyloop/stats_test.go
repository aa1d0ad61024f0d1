package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/runstats"
	"github.com/polyloop/polyloop/sweep"
)

func TestComputeStatsKeepsUnfinishedRuns(t *testing.T) {
	t.Parallel()
	fin := func(id, agent string, reason polyloop.StopReason, steps int, cost float64) polyloop.RunSummary {
		return polyloop.RunSummary{RunID: id, Agent: agent, Finished: true, StopReason: reason,
			Totals: &polyloop.Totals{Steps: steps, InputTokens: int64(10 * steps), CostUSD: cost}}
	}
	runs := []polyloop.RunSummary{
		fin("a", "x", polyloop.StopCompleted, 2, 0.1),
		fin("b", "x", polyloop.StopCompleted, 4, 0.3),
		fin("c", "y", polyloop.StopEnvError, 1, 0.05),
		{RunID: "d", Agent: "x", Totals: &polyloop.Totals{Steps: 9, UnknownActions: 1, UnknownModelCalls: 2}},
	}
	all := runstats.Compute(runs, runstats.KeyBy("", nil))
	if len(all) != 1 {
		t.Fatalf("%d groups", len(all))
	}
	g := all[0]
	if g.Runs != 4 || g.Finished != 3 || g.Unfinished != 1 || len(g.UnfinishedRuns) != 1 || g.UnfinishedRuns[0] != "d" {
		t.Errorf("counts: %+v", g)
	}
	if g.StopReasons[polyloop.StopCompleted] != 2 || g.StopReasons[polyloop.StopEnvError] != 1 || g.StopReasons[polyloop.StopMaxSteps] != 0 {
		t.Errorf("stop reasons: %v", g.StopReasons)
	}
	// The unfinished run's 9 steps are not in the distribution of finished runs.
	if got := distText(g.Steps, count); g.Steps.N != 3 || got != "n 3  sum 7  p50 2  p90 4  max 4" {
		t.Errorf("steps: n=%d %s", g.Steps.N, got)
	}
	if g.UnknownActions != 1 || g.UnknownModelCalls != 2 {
		t.Errorf("unknown outcomes: %d actions, %d model calls", g.UnknownActions, g.UnknownModelCalls)
	}
	by := runstats.Compute(runs, runstats.KeyBy("agent", nil))
	if len(by) != 2 || by[0].Group != "x" || by[0].Runs != 3 || by[1].Group != "y" || by[1].Runs != 1 {
		t.Errorf("by agent: %+v %+v", by[0], by[1])
	}
}

// TestCostPercentilesLeaveOutUnknownCost checks that a run whose cost is
// partly unknown does not enter the cost percentiles at its known part (which
// would read as a cheap run), that it is counted, and that a group with no
// known cost has no cost percentiles at all.
func TestCostPercentilesLeaveOutUnknownCost(t *testing.T) {
	t.Parallel()
	run := func(id, agent string, cost float64, unknown bool) polyloop.RunSummary {
		return polyloop.RunSummary{RunID: id, Agent: agent, Finished: true, StopReason: polyloop.StopCompleted,
			Totals: &polyloop.Totals{Steps: 1, CostUSD: cost, CostUnknown: unknown}}
	}
	groups := runstats.Compute([]polyloop.RunSummary{
		run("a", "priced", 0.5, false),
		run("b", "priced", 0, true),
		run("c", "priced", 0.1, true),
		run("d", "priced", 0.7, false),
		run("e", "local", 0, true),
	}, runstats.KeyBy("agent", nil))
	priced, local := groups[0], groups[1]
	if got := distText(priced.CostUSD, usd); priced.CostUSD.N != 2 || got != "n 2  sum 1.2  p50 0.5  p90 0.7  max 0.7" {
		t.Errorf("priced cost: n=%d %s, want the two known costs only", priced.CostUSD.N, got)
	}
	if priced.CostUnknownRuns != 2 || local.CostUnknownRuns != 1 {
		t.Errorf("runs with unknown cost: priced %d, local %d; want 2 and 1", priced.CostUnknownRuns, local.CostUnknownRuns)
	}
	if local.CostUSD.N != 0 || local.CostUSD.P50 != nil || distText(local.CostUSD, usd) != "unknown" {
		t.Errorf("local cost: %+v, want unknown", local.CostUSD)
	}
	b, err := json.Marshal(local.CostUSD)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"n":0,"sum":null,"p50":null,"p90":null,"max":null}` {
		t.Errorf("unknown cost in JSON: %s", b)
	}
}

func TestNumbersPrintedWithoutFloatNoise(t *testing.T) {
	t.Parallel()
	a, b, big := 0.1, 0.2, 2345678.0
	noisy := a + b // 0.30000000000000004
	if got := usd(&noisy); got != "0.3" {
		t.Errorf("usd(%v) = %s, want 0.3", noisy, got)
	}
	if got := count(&big); got != "2345678" {
		t.Errorf("count(%v) = %s, want 2345678", big, got)
	}
	if usd(nil) != "" || count(nil) != "" {
		t.Error("an unknown statistic prints as something")
	}
}

// TestSpendTextIsALowerBound: a spend partly unknown reads "≥", one none of
// which is known "unknown", never as the spend.
func TestSpendTextIsALowerBound(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		s    runstats.Spend
		want string
	}{
		{runstats.Spend{Tokens: 1200, CostUSD: 0.12}, "1200 tokens, $0.12"},
		{runstats.Spend{Tokens: 1200, TokensUnknown: true, CostUSD: 0.12, CostUnknown: true}, "≥ 1200 tokens, ≥ $0.12"},
		{runstats.Spend{Tokens: 1200, CostUnknown: true}, "1200 tokens, cost unknown"},
		{runstats.Spend{TokensUnknown: true, CostUnknown: true}, "tokens unknown, cost unknown"},
		{runstats.Spend{}, "0 tokens, $0"},
	} {
		if got := spendText(tt.s); got != tt.want {
			t.Errorf("spendText(%+v) = %q, want %q", tt.s, got, tt.want)
		}
	}
}

// Long lists of unsettled or unfinished runs are summarised: how many,
// the first few, and how to list them all; short ones are listed.
func TestUnsettledSummarised(t *testing.T) {
	t.Parallel()
	var ids []string
	for i := 1; i <= 12; i++ {
		ids = append(ids, fmt.Sprintf("s.a.t%d.e1.a1", i))
	}
	g := &sweep.GroupStats{Group: "all", Outcomes: 12, Unsettled: ids,
		Runs: &runstats.Group{Runs: 12, Unfinished: 12, UnfinishedRuns: ids[:3], StopReasons: map[polyloop.StopReason]int{}}}
	var b strings.Builder
	writeSweepGroup(&b, &sweep.Stats{Sweep: "s"}, g)
	out := b.String()
	want := "  unsettled: 12: s.a.t1.e1.a1 s.a.t2.e1.a1 s.a.t3.e1.a1 s.a.t4.e1.a1 s.a.t5.e1.a1 … and 7 more (polyloop stats --sweep s --json lists them all)\n"
	if !strings.Contains(out, want) || !strings.Contains(out, "  unfinished runs: s.a.t1.e1.a1 s.a.t2.e1.a1 s.a.t3.e1.a1\n") {
		t.Errorf("got:\n%s\nwant a line:\n%s", out, want)
	}
}

// The hash users see as a group's key (stats --by hash: the agent
// configuration hash) is the hash --hash selects; --snapshot selects by
// the snapshot hash (the same inputs: task included).
func TestHashFlagIsTheAgentConfiguration(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	c.write("quick.yaml", quickAgent)
	for _, run := range [][]string{{"q1", "what is 1+3?"}, {"q2", "what is 2+2?"}} {
		if code, _, stderr := c.run("run", "quick.yaml", run[1], "--id", run[0]); code != exitOK {
			t.Fatalf("run: %s", stderr)
		}
	}
	code, stdout, stderr := c.run("stats", "--by", "hash", "--json")
	var groups []struct {
		Group string `json:"group"`
		Runs  int    `json:"runs"`
	}
	if code != exitOK || json.Unmarshal([]byte(stdout), &groups) != nil || len(groups) != 1 || groups[0].Runs != 2 {
		t.Fatalf("stats --by hash: exit %d\n%s\n%s", code, stdout, stderr)
	}
	ls := func(args ...string) []string {
		t.Helper()
		code, stdout, stderr := c.run(append([]string{"ls", "--json"}, args...)...)
		var runs []struct {
			RunID        string `json:"run_id"`
			SnapshotHash string `json:"snapshot_hash"`
		}
		if code != exitOK || json.Unmarshal([]byte(stdout), &runs) != nil {
			t.Fatalf("ls %v: exit %d\n%s\n%s", args, code, stdout, stderr)
		}
		var ids []string
		for _, r := range runs {
			ids = append(ids, r.RunID+"="+r.SnapshotHash)
		}
		return ids
	}
	all := ls()
	if got := ls("--hash", groups[0].Group); len(got) != 2 {
		t.Errorf("ls --hash %s (the key of stats --by hash): %v, want both runs", groups[0].Group, got)
	}
	short := strings.TrimPrefix(groups[0].Group, "sha256:")[:12]
	if got := ls("--hash", short, "--limit", "1"); len(got) != 1 {
		t.Errorf("ls --hash %s --limit 1: %v", short, got)
	}
	snap := strings.SplitN(all[0], "=", 2)[1]
	if got := ls("--snapshot", snap); len(got) != 1 || got[0] != all[0] {
		t.Errorf("ls --snapshot %s: %v, want %s", snap, got, all[0])
	}
	if got := ls("--hash", snap); len(got) != 0 {
		t.Errorf("ls --hash with a snapshot hash: %v, want none (that is --snapshot's)", got)
	}
	code, stdout, stderr = c.run("stats", "--hash", groups[0].Group, "--json")
	if code != exitOK || !strings.Contains(stdout, `"runs": 2`) {
		t.Errorf("stats --hash: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
