// Package runstats computes the statistics of a set of runs from their
// summaries: the stop-reason distribution, steps/tokens/cost sums and
// percentiles, what the runs spent (unfinished ones included), executions
// of unknown outcome and the unfinished runs. `polyloop stats`
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
	polyloop.StopTimeLimit, polyloop.StopWorkingLimit, polyloop.StopLLMError, polyloop.StopEnvError, polyloop.StopResumeStateUnknown,
}

// Group holds the statistics of one group of runs. Distributions are over
// finished runs; unfinished runs are counted and listed, never dropped, and
// what they spent is in Spend and UnfinishedSpend.
//
// A run whose tokens or cost are partly unknown (Totals.TokensUnknown,
// CostUnknown) is left out of that distribution, since its known part would
// read as its value; it is counted (TokensUnknownRuns, CostUnknownRuns), and
// its known part is in Spend, marked as a lower bound.
type Group struct {
	Group      string `json:"group"`
	Runs       int    `json:"runs"`
	Finished   int    `json:"finished"`
	Unfinished int    `json:"unfinished"`
	// Awaiting counts the unfinished runs suspended at a gate, waiting for
	// an approval or a delivery (RunSummary.Awaiting): part of Unfinished.
	Awaiting int `json:"awaiting"`
	// Running counts the unfinished runs a live process drives now
	// (RunSummary.Running): part of Unfinished, listed in RunningRuns.
	// Their executions under way are not of unknown outcome.
	Running int `json:"running,omitempty"`
	// StopReasons counts finished runs by stop reason (every reason, zeros
	// included).
	StopReasons map[polyloop.StopReason]int `json:"stop_reasons"`
	Steps       Dist                        `json:"steps"`
	// Tokens is over the finished runs whose tokens are known.
	Tokens Dist `json:"tokens"`
	// TokensUnknownRuns counts the finished runs with part of their tokens
	// unknown, the ones Tokens leaves out.
	TokensUnknownRuns int `json:"tokens_unknown_runs"`
	// CostUSD is over the finished runs whose cost is known: a run with
	// part of its cost unknown is left out, since its known part would
	// read as its cost.
	CostUSD Dist `json:"cost_usd"`
	// CostUnknownRuns counts the finished runs with part of their cost
	// unknown, the ones CostUSD leaves out.
	CostUnknownRuns int `json:"cost_unknown_runs"`
	// UnknownModelCalls and UnknownActions sum the executions of unknown
	// outcome over all the group's runs, unfinished ones included.
	UnknownModelCalls int `json:"unknown_model_calls"`
	UnknownActions    int `json:"unknown_actions"`
	// Reconciled sums the actions of unknown outcome a reconciler answered
	// for, by what the run did (adopted, re-run, still unknown);
	// ReconciledRuns counts the runs with at least one, and
	// ReconciledCompleted those of them that finished completed: episodes
	// saved by asking the world.
	Reconciled          polyloop.ReconciledCounts `json:"reconciled"`
	ReconciledRuns      int                       `json:"reconciled_runs"`
	ReconciledCompleted int                       `json:"reconciled_completed"`
	// Spend is what all the group's runs spent, finished or not, known or
	// partly unknown; UnfinishedSpend is the part the unfinished runs spent
	// so far.
	Spend           Spend    `json:"spend"`
	UnfinishedSpend Spend    `json:"unfinished_spend"`
	UnfinishedRuns  []string `json:"unfinished_runs"`
	RunningRuns     []string `json:"running_runs,omitempty"`
	// Samples are the values the distributions summarize, sorted (for
	// histograms).
	Samples Samples `json:"-"`
}

// Samples are the values behind a group's distributions.
type Samples struct {
	Steps, Tokens, CostUSD []float64
}

// Spend is what a set of runs consumed: the sums of their known tokens and
// known costs. TokensUnknown and CostUnknown say that a sum is a lower
// bound, not the total: some run's tokens or cost are not all known (a
// model call of unknown outcome, a reply without usage or without a
// price). A sum that is a lower bound reads "at least", never as the
// spend.
type Spend struct {
	Runs          int     `json:"runs"`
	Tokens        int64   `json:"tokens"`
	TokensUnknown bool    `json:"tokens_unknown"`
	CostUSD       float64 `json:"cost_usd"`
	CostUnknown   bool    `json:"cost_unknown"`
}

func (s *Spend) add(t *polyloop.Totals) {
	s.Runs++
	s.Tokens += t.Tokens()
	s.TokensUnknown = s.TokensUnknown || t.TokensUnknown
	s.CostUSD += t.CostUSD
	s.CostUnknown = s.CostUnknown || t.CostUnknown
}

// Dist is a distribution summary: the sum of its N values and nearest-rank
// percentiles. Over no values the sum and percentiles are nil (null in
// JSON): unknown, never zero.
type Dist struct {
	N   int      `json:"n"`
	Sum *float64 `json:"sum"`
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
		var sum float64
		for _, v := range values {
			sum += v
		}
		p50, p90, top := percentile(values, 0.5), percentile(values, 0.9), values[len(values)-1]
		d.Sum, d.P50, d.P90, d.Max = &sum, &p50, &p90, &top
	}
	return d
}

// The groupings of Compute.
const (
	ByNone  = ""
	ByAgent = "agent"
	// ByHash groups by agent configuration hash
	// (polyloop.Snapshot.AgentHash): the runs of one configuration of an
	// agent, whatever their task. KeyBy needs the runs' hashes
	// (AgentHashes).
	ByHash = "hash"
	// BySnapshot groups by snapshot hash: the runs given the same inputs,
	// task included.
	BySnapshot = "snapshot"
)

// Groupings lists the groupings of KeyBy.
var Groupings = []string{ByAgent, ByHash, BySnapshot}

// Compute groups runs by key and summarizes each group, in order of first
// appearance. Every run must carry Totals (List computes them for
// unfinished runs).
func Compute(runs []polyloop.RunSummary, key func(polyloop.RunSummary) string) []*Group {
	var order []string
	groups := map[string][]polyloop.RunSummary{}
	for _, r := range runs {
		k := key(r)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	out := make([]*Group, 0, len(order))
	for _, k := range order {
		out = append(out, summarize(k, groups[k]))
	}
	return out
}

// KeyBy is the group key of a grouping: ByAgent, ByHash (the run's agent
// configuration hash, from agentHashes by run id; "unknown" for a run
// absent from it), BySnapshot, or ByNone for one group "all".
func KeyBy(by string, agentHashes map[string]string) func(polyloop.RunSummary) string {
	switch by {
	case ByAgent:
		return func(r polyloop.RunSummary) string { return r.Agent }
	case ByHash:
		return func(r polyloop.RunSummary) string {
			if h, ok := agentHashes[r.RunID]; ok {
				return h
			}
			return "unknown"
		}
	case BySnapshot:
		return func(r polyloop.RunSummary) string { return r.SnapshotHash }
	}
	return func(polyloop.RunSummary) string { return "all" }
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
		if rc := t.Reconciled; rc.Total() > 0 {
			g.Reconciled.Adopted += rc.Adopted
			g.Reconciled.Rerun += rc.Rerun
			g.Reconciled.Unknown += rc.Unknown
			g.ReconciledRuns++
			if r.Finished && r.StopReason == polyloop.StopCompleted {
				g.ReconciledCompleted++
			}
		}
		g.Spend.add(t)
		if !r.Finished {
			g.Unfinished++
			if r.Awaiting != "" {
				g.Awaiting++
			}
			if r.Running != nil {
				g.Running++
				g.RunningRuns = append(g.RunningRuns, r.RunID)
			}
			g.UnfinishedRuns = append(g.UnfinishedRuns, r.RunID)
			g.UnfinishedSpend.add(t)
			continue
		}
		g.Finished++
		g.StopReasons[r.StopReason]++
		steps = append(steps, float64(t.Steps))
		if t.TokensUnknown {
			g.TokensUnknownRuns++
		} else {
			tokens = append(tokens, float64(t.Tokens()))
		}
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
