package runstats

import (
	"math"
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

// TestAccuracyClustered checks the clustered standard error against a
// hand computation. Tasks a (scores 1, 1), b (1, 0), c (0, 0): mean 0.5;
// residual sums a +1, b 0, c −1; SE² = 3/2 · 2 / 36 = 1/12.
func TestAccuracyClustered(t *testing.T) {
	t.Parallel()
	e := Accuracy([]ScoreSample{{"a", 1}, {"a", 1}, {"b", 1}, {"b", 0}, {"c", 0}, {"c", 0}})
	want := math.Sqrt(1.0 / 12)
	if e == nil || e.N != 6 || e.Clusters != 3 || e.Mean != 0.5 || e.SE == nil || math.Abs(*e.SE-want) > 1e-12 {
		t.Fatalf("estimate %+v, want mean 0.5 and SE %v", e, want)
	}
	if math.Abs(*e.Low-(0.5-1.96*want)) > 1e-12 || math.Abs(*e.High-(0.5+1.96*want)) > 1e-12 {
		t.Errorf("interval [%v, %v]", *e.Low, *e.High)
	}
	if one := Accuracy([]ScoreSample{{"a", 1}, {"a", 0}}); one.SE != nil || one.Mean != 0.5 {
		t.Errorf("one cluster: %+v, want a mean and no interval", one)
	}
	if Accuracy(nil) != nil {
		t.Error("no samples: an estimate")
	}
}

func finished(id string, tt polyloop.Totals) polyloop.RunSummary {
	return polyloop.RunSummary{RunID: id, Agent: "a", Finished: true, StopReason: polyloop.StopCompleted, Totals: &tt}
}

func unfinished(id string, tt polyloop.Totals) polyloop.RunSummary {
	return polyloop.RunSummary{RunID: id, Agent: "a", Totals: &tt}
}

// TestSumsAndSpend: each distribution has the sum of the values it
// summarizes (the same runs as n); runs whose tokens or cost are partly
// unknown are left out of that distribution and counted; the spend of all
// runs and of the unfinished ones is summed, marked as a lower bound when
// any of it is unknown.
func TestSumsAndSpend(t *testing.T) {
	t.Parallel()
	runs := []polyloop.RunSummary{
		finished("known1", polyloop.Totals{Steps: 2, InputTokens: 100, OutputTokens: 10, CostUSD: 0.25}),
		finished("known2", polyloop.Totals{Steps: 3, InputTokens: 200, OutputTokens: 20, CostUSD: 0.5}),
		finished("cost?", polyloop.Totals{Steps: 4, InputTokens: 300, OutputTokens: 30, CostUSD: 0.125, CostUnknown: true}),
		finished("tokens?", polyloop.Totals{Steps: 1, InputTokens: 40, OutputTokens: 4, CostUSD: 0.0625, TokensUnknown: true, CostUnknown: true, UnknownModelCalls: 1}),
		unfinished("open1", polyloop.Totals{Steps: 1, InputTokens: 50, OutputTokens: 5, CostUSD: 1}),
		unfinished("open2", polyloop.Totals{InputTokens: 7, OutputTokens: 1, CostUSD: 2, TokensUnknown: true, CostUnknown: true, UnknownModelCalls: 1}),
	}
	g := Compute(runs, KeyBy(ByNone, nil))[0]
	sum := func(d Dist) float64 {
		if d.Sum == nil {
			return -1
		}
		return *d.Sum
	}
	if g.Steps.N != 4 || sum(g.Steps) != 10 {
		t.Errorf("steps %+v, want n 4, sum 10 (every finished run)", g.Steps)
	}
	if g.Tokens.N != 3 || sum(g.Tokens) != 110+220+330 || g.TokensUnknownRuns != 1 {
		t.Errorf("tokens %+v, %d unknown; want n 3, sum 660, 1 run left out", g.Tokens, g.TokensUnknownRuns)
	}
	if g.CostUSD.N != 2 || sum(g.CostUSD) != 0.75 || g.CostUnknownRuns != 2 {
		t.Errorf("cost %+v, %d unknown; want n 2, sum 0.75, 2 runs left out", g.CostUSD, g.CostUnknownRuns)
	}
	wantAll := Spend{Runs: 6, Tokens: 110 + 220 + 330 + 44 + 55 + 8, TokensUnknown: true, CostUSD: 0.25 + 0.5 + 0.125 + 0.0625 + 1 + 2, CostUnknown: true}
	if g.Spend != wantAll {
		t.Errorf("spend %+v, want %+v", g.Spend, wantAll)
	}
	wantOpen := Spend{Runs: 2, Tokens: 55 + 8, TokensUnknown: true, CostUSD: 3, CostUnknown: true}
	if g.UnfinishedSpend != wantOpen {
		t.Errorf("unfinished spend %+v, want %+v", g.UnfinishedSpend, wantOpen)
	}
	known := Compute(runs[:2], KeyBy(ByNone, nil))[0]
	if known.Spend.TokensUnknown || known.Spend.CostUnknown || known.Spend.CostUSD != 0.75 || known.UnfinishedSpend != (Spend{}) {
		t.Errorf("known runs only: spend %+v, unfinished %+v", known.Spend, known.UnfinishedSpend)
	}
	none := Compute(runs[4:], KeyBy(ByNone, nil))[0]
	if none.Tokens.Sum != nil || none.CostUSD.Sum != nil || none.Steps.Sum != nil {
		t.Errorf("no finished run: sums %v %v %v, want null (nothing to sum)", none.Steps.Sum, none.Tokens.Sum, none.CostUSD.Sum)
	}
}
