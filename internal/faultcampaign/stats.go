package faultcampaign

import (
	"math"
	"sort"

	"github.com/polyloop/polyloop"
)

// Group is what polyloop stats must report for a group of the campaign's
// runs, computed from their expectations by the rules `polyloop stats
// --help` states: distributions over the finished runs (tokens over those
// whose tokens are known, cost over those whose cost is), each with n, sum
// and nearest-rank percentiles; the runs those distributions leave out
// counted; executions of unknown outcome summed over every run; what every
// run spent and what the unfinished ones spent; the unfinished runs listed.
type Group struct {
	Runs, Finished, Unfinished           int
	Awaiting                             int // the campaign has no gates: always 0
	StopReasons                          map[polyloop.StopReason]int
	Steps, Tokens, CostUSD               Dist
	TokensUnknownRuns, CostUnknownRuns   int
	UnknownModelCalls, UnknownActions    int
	Spend, UnfinishedSpend               Spend
	UnfinishedRuns                       []string // sorted
	finishedSteps, knownTokens, knownUSD []float64
}

// Dist is a distribution: n, and over n > 0 values the sum and the
// nearest-rank p50, p90 and max (nil over none).
type Dist struct {
	N                  int
	Sum, P50, P90, Max *float64
}

// Spend is what a set of runs spent: their known tokens and costs, and
// whether any part is unknown (the sums are then lower bounds).
type Spend struct {
	Runs          int
	Tokens        int64
	TokensUnknown bool
	CostUSD       float64
	CostUnknown   bool
}

// ExpectStats groups results by key and computes each group's statistics.
func ExpectStats(results []Result, key func(Plan) string) map[string]*Group {
	groups := map[string]*Group{}
	for _, r := range results {
		k := key(r.Plan)
		g := groups[k]
		if g == nil {
			g = &Group{StopReasons: map[polyloop.StopReason]int{}}
			groups[k] = g
		}
		g.add(r)
	}
	for _, g := range groups {
		g.Steps, g.Tokens, g.CostUSD = dist(g.finishedSteps), dist(g.knownTokens), dist(g.knownUSD)
		sort.Strings(g.UnfinishedRuns)
	}
	return groups
}

func (g *Group) add(r Result) {
	e, t := r.Expected, r.Expected.Totals
	g.Runs++
	g.UnknownModelCalls += t.UnknownModelCalls
	g.UnknownActions += t.UnknownActions
	g.Spend.add(t)
	if !e.Finished {
		g.Unfinished++
		g.UnfinishedRuns = append(g.UnfinishedRuns, r.Plan.RunID)
		g.UnfinishedSpend.add(t)
		return
	}
	g.Finished++
	g.StopReasons[e.StopReason]++
	g.finishedSteps = append(g.finishedSteps, float64(t.Steps))
	if t.TokensUnknown {
		g.TokensUnknownRuns++
	} else {
		g.knownTokens = append(g.knownTokens, float64(t.Tokens()))
	}
	if t.CostUnknown {
		g.CostUnknownRuns++
	} else {
		g.knownUSD = append(g.knownUSD, t.CostUSD)
	}
}

func (s *Spend) add(t polyloop.Totals) {
	s.Runs++
	s.Tokens += t.Tokens()
	s.TokensUnknown = s.TokensUnknown || t.TokensUnknown
	s.CostUSD += t.CostUSD
	s.CostUnknown = s.CostUnknown || t.CostUnknown
}

func dist(values []float64) Dist {
	d := Dist{N: len(values)}
	if len(values) == 0 {
		return d
	}
	v := append([]float64(nil), values...)
	sort.Float64s(v)
	var sum float64
	for _, x := range v {
		sum += x
	}
	rank := func(p float64) *float64 {
		x := v[int(math.Ceil(p*float64(len(v))))-1]
		return &x
	}
	d.Sum, d.P50, d.P90, d.Max = &sum, rank(0.5), rank(0.9), &v[len(v)-1]
	return d
}
