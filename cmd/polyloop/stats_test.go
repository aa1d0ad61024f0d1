package main

import (
	"testing"

	"github.com/polyloop/polyloop"
)

func TestPercentileNearestRank(t *testing.T) {
	t.Parallel()
	values := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tt := range []struct{ p, want float64 }{{0.5, 5}, {0.9, 9}, {1, 10}, {0.01, 1}} {
		if got := percentile(values, tt.p); got != tt.want {
			t.Errorf("percentile(1..10, %v) = %v, want %v", tt.p, got, tt.want)
		}
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("percentile of nothing = %v", got)
	}
}

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
	all := computeStats(runs, "")
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
	if g.Steps != (dist{N: 3, P50: 2, P90: 4, Max: 4}) {
		t.Errorf("steps: %+v", g.Steps)
	}
	if g.UnknownActions != 1 || g.UnknownModelCalls != 2 {
		t.Errorf("unknown outcomes: %d actions, %d model calls", g.UnknownActions, g.UnknownModelCalls)
	}
	by := computeStats(runs, "agent")
	if len(by) != 2 || by[0].Group != "x" || by[0].Runs != 3 || by[1].Group != "y" || by[1].Runs != 1 {
		t.Errorf("by agent: %+v %+v", by[0], by[1])
	}
}
