// Package runstats computes the statistics of a set of runs from their
// summaries: the stop-reason distribution, steps/tokens/cost percentiles,
// executions of unknown outcome and the unfinished runs. `polyloop stats`
// prints them and `polyloop view` draws them; both call Compute, so the
// numbers are the same.
package runstats

import (
	"math"
	"sort"

	"github.com/polyloop/polyloop"
)

// StopReasons lists the stop reasons in the order statistics print them.
var StopReasons = []polyloop.StopReason{
	polyloop.StopCompleted, polyloop.StopMaxSteps, polyloop.StopTokenBudget, polyloop.StopCostBudget,
	polyloop.StopLLMError, polyloop.StopEnvError, polyloop.StopResumeStateUnknown,
}

// Group holds the statistics of one group of runs. Distributions are over
// finished runs; unfinished runs are counted and listed, never dropped.
type Group struct {
	Group      string `json:"group"`
	Runs       int    `json:"runs"`
	Finished   int    `json:"finished"`
	Unfinished int    `json:"unfinished"`
	// StopReasons counts finished runs by stop reason (every reason, zeros
	// included).
	StopReasons map[polyloop.StopReason]int `json:"stop_reasons"`
	Steps       Dist                        `json:"steps"`
	Tokens      Dist                        `json:"tokens"`
	// CostUSD is over the finished runs whose cost is known: a run with
	// part of its cost unknown is left out, since its known part would
	// read as its cost.
	CostUSD Dist `json:"cost_usd"`
	// CostUnknownRuns counts the finished runs with part of their cost
	// unknown, the ones CostUSD leaves out.
	CostUnknownRuns int `json:"cost_unknown_runs"`
	// UnknownModelCalls and UnknownActions sum the executions of unknown
	// outcome over all the group's runs, unfinished ones included.
	UnknownModelCalls int      `json:"unknown_model_calls"`
	UnknownActions    int      `json:"unknown_actions"`
	UnfinishedRuns    []string `json:"unfinished_runs"`
	// Samples are the values the distributions summarize, sorted (for
	// histograms).
	Samples Samples `json:"-"`
}

// Samples are the values behind a group's distributions.
type Samples struct {
	Steps, Tokens, CostUSD []float64
}

// Dist is a distribution summary: nearest-rank percentiles. Over no values
// the percentiles are nil (null in JSON): unknown, never zero.
type Dist struct {
	N   int      `json:"n"`
	P50 *float64 `json:"p50"`
	P90 *float64 `json:"p90"`
	Max *float64 `json:"max"`
}

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

// newDist sorts values and summarizes them.
func newDist(values []float64) Dist {
	sort.Float64s(values)
	d := Dist{N: len(values)}
	if len(values) > 0 {
		p50, p90, top := percentile(values, 0.5), percentile(values, 0.9), values[len(values)-1]
		d.P50, d.P90, d.Max = &p50, &p90, &top
	}
	return d
}

// The groupings of Compute.
const (
	ByNone  = ""
	ByAgent = "agent"
	ByHash  = "hash"
)

// Compute groups runs (ByAgent, ByHash, or ByNone for one group "all") and
// summarizes each group, in order of first appearance. Every run must
// carry Totals (List computes them for unfinished runs).
func Compute(runs []polyloop.RunSummary, by string) []*Group {
	var order []string
	groups := map[string][]polyloop.RunSummary{}
	for _, r := range runs {
		key := Key(r, by)
		if _, ok := groups[key]; !ok {
			order = append(order, key)
		}
		groups[key] = append(groups[key], r)
	}
	out := make([]*Group, 0, len(order))
	for _, key := range order {
		out = append(out, summarize(key, groups[key]))
	}
	return out
}

// Key is the group of a run in Compute's grouping by.
func Key(r polyloop.RunSummary, by string) string {
	switch by {
	case ByAgent:
		return r.Agent
	case ByHash:
		return r.SnapshotHash
	}
	return "all"
}

func summarize(group string, runs []polyloop.RunSummary) *Group {
	g := &Group{Group: group, Runs: len(runs), StopReasons: map[polyloop.StopReason]int{}, UnfinishedRuns: []string{}}
	for _, r := range StopReasons {
		g.StopReasons[r] = 0
	}
	var steps, tokens, cost []float64
	for _, r := range runs {
		t := r.Totals
		g.UnknownModelCalls += t.UnknownModelCalls
		g.UnknownActions += t.UnknownActions
		if !r.Finished {
			g.Unfinished++
			g.UnfinishedRuns = append(g.UnfinishedRuns, r.RunID)
			continue
		}
		g.Finished++
		g.StopReasons[r.StopReason]++
		steps = append(steps, float64(t.Steps))
		tokens = append(tokens, float64(t.Tokens()))
		if t.CostUnknown {
			g.CostUnknownRuns++
		} else {
			cost = append(cost, t.CostUSD)
		}
	}
	g.Steps, g.Tokens, g.CostUSD = newDist(steps), newDist(tokens), newDist(cost)
	g.Samples = Samples{Steps: steps, Tokens: tokens, CostUSD: cost}
	return g
}
