package sweep

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/runstats"
	"github.com/polyloop/polyloop/sweep/ledger"
)

// The groupings of ComputeStats.
const (
	ByNone  = ""
	ByAgent = "agent"
	// ByHash groups by agent configuration hash: the snapshot hash of the
	// agent without a task (polyloop.Snapshot.AgentHash), which the run
	// ids start with.
	ByHash  = "hash"
	ByTask  = "task"
	ByEpoch = "epoch"
)

// ErrInvalidQuery marks a question about a sweep that it cannot answer: a
// grouping, a sort, a scorer or an agent it does not have
// (ComputeStats, ReadSamples, Compare).
var ErrInvalidQuery = errors.New("sweep: invalid query")

// QueryError is a query a sweep cannot answer, naming the setting: its
// Field (by, scorer, sort, compare, offset, limit), as StatsOptions,
// SampleQuery and Compare call it, and the value given, so that a command
// names its flag and a page its parameter. errors.Is(err,
// ErrInvalidQuery) holds.
type QueryError struct {
	Field, Value string
	// Reason says what is expected or what the sweep has.
	Reason string
}

func (e *QueryError) Error() string {
	return fmt.Sprintf("sweep: invalid query: %s %q: %s", e.Field, e.Value, e.Reason)
}

// Is makes a QueryError an ErrInvalidQuery.
func (e *QueryError) Is(target error) bool { return target == ErrInvalidQuery }

// noScorer is the QueryError of a scorer the sweep does not have.
func noScorer(m Manifest, scorer string) error {
	var names []string
	for _, s := range m.Scorers {
		names = append(names, s.Name)
	}
	return &QueryError{Field: "scorer", Value: scorer, Reason: fmt.Sprintf("sweep %s has no such scorer (its scorers: %s)", m.Name, strings.Join(names, ", "))}
}

// StatsOptions say how ComputeStats groups and scores.
type StatsOptions struct {
	// By groups the outcomes: ByNone (one group "all"), ByAgent, ByHash,
	// ByTask or ByEpoch.
	By string
	// Scorer names the scorer whose scores accuracy and pass@k use;
	// empty: the sweep's first.
	Scorer string
}

// Stats are the statistics of a sweep.
type Stats struct {
	Sweep  string `json:"sweep"`
	By     string `json:"by"`
	Scorer string `json:"scorer"`
	Epochs int    `json:"epochs"`
	// LeftOut counts the runs of the sweep's ledger that the statistics
	// leave out: runs of agents the sweep no longer has (an agent file
	// changed: its snapshot hash did), or of epochs beyond its epochs.
	LeftOut int           `json:"left_out_runs"`
	Groups  []*GroupStats `json:"groups"`
}

// GroupStats are the statistics of one group of a sweep's outcomes (an
// outcome is one agent's last attempt at one task and epoch).
type GroupStats struct {
	Group string `json:"group"`
	// Runs are the statistics of every run of the group, failed attempts
	// included (the same as polyloop stats over those runs): stop reasons,
	// steps, tokens and cost percentiles over the finished runs,
	// executions of unknown outcome, unfinished runs listed.
	Runs *runstats.Group `json:"runs"`
	// TokensSum and CostSum add up every run's totals (unfinished runs'
	// from their logs); TokensUnknownRuns and CostUnknownRuns count the
	// runs whose part is a lower bound.
	TokensSum         int64   `json:"tokens_sum"`
	TokensUnknownRuns int     `json:"tokens_unknown_runs"`
	CostSum           float64 `json:"cost_usd_sum"`
	CostUnknownRuns   int     `json:"cost_unknown_runs"`
	// Outcomes counts the group's agent × task × epoch coordinates that
	// have a run; Settled those whose last attempt finished and is not
	// waiting for a retry.
	Outcomes int `json:"outcomes"`
	Settled  int `json:"settled"`
	// OutcomeStopReasons counts the settled outcomes by the stop reason of
	// their last attempt (every reason, zeros included).
	OutcomeStopReasons map[polyloop.StopReason]int `json:"outcome_stop_reasons"`
	// Attempts counts the settled outcomes by stop reason and number of
	// attempts: {"completed": {"1": 580, "2": 17}}.
	Attempts map[polyloop.StopReason]map[string]int `json:"attempts"`
	// Unsettled lists the outcomes not settled, by the run id of their
	// last attempt: unfinished, not started, or waiting for a retry.
	Unsettled []string `json:"unsettled"`
	// Scored counts the settled outcomes with a score of the scorer;
	// Unscored the others (a stop reason the sweep retries, which is not
	// scored; or a scorer that failed).
	Scored   int `json:"scored"`
	Unscored int `json:"unscored"`
	// ScorerFailures count, per scorer (every scorer of the sweep, not only
	// Stats.Scorer) with a failure, the settled outcomes it could not
	// score, with the first error; ordered by scorer name, empty when
	// every scorer scored every outcome it was asked to.
	ScorerFailures []ScorerFailure `json:"scorer_failures"`
	// Accuracy is the mean score over the scored outcomes with its
	// standard error and 95% interval, clustered by task (the epochs of a
	// task are not independent); nil with no scored outcome.
	Accuracy *runstats.Estimate `json:"accuracy"`
	// PassAtK estimates, for k from 1 to the sweep's epochs (when it has
	// more than one), the chance that at least one of k epochs passes
	// (a score of 1), per agent and task, averaged.
	PassAtK []PassAtK `json:"pass_at_k,omitempty"`
	// PassHatK (pass^k, τ-bench's reliability) estimates the chance that
	// all k epochs pass, with the unbiased estimator C(c, k) / C(n, k)
	// per agent and task (n scored epochs, c passing), averaged.
	PassHatK []PassAtK `json:"pass_hat_k,omitempty"`
}

// PassAtK is the pass@k (or pass^k) estimate of a group.
type PassAtK struct {
	K int `json:"k"`
	// Pairs counts the (agent, task) pairs with at least k scored epochs,
	// over which Mean averages the unbiased estimator — for pass@k
	// 1 − C(n−c, k) / C(n, k), for pass^k C(c, k) / C(n, k) (n scored
	// epochs, c passing); SE is the standard error of that mean, nil with
	// fewer than two pairs.
	Pairs int      `json:"pairs"`
	Mean  float64  `json:"mean"`
	SE    *float64 `json:"se"`
}

// statsPage is how many entries ComputeStats reads at once.
const statsPage = 1000

// ComputeStats computes the statistics of the sweep name from the store:
// its manifest, its ledger entries and scores, and the runs' summaries
// (the logs of unfinished runs are read for their totals). Errors:
// ledger.ErrNotFound for an unknown sweep, a store failure, a scorer the
// sweep does not have.
func ComputeStats(ctx context.Context, store Store, name string, opts StatsOptions) (*Stats, error) {
	m, err := ReadManifest(ctx, store, name)
	if err != nil {
		return nil, err
	}
	if err := checkBy(opts.By); err != nil {
		return nil, err
	}
	st := &Stats{Sweep: name, By: opts.By, Scorer: opts.Scorer, Epochs: m.Epochs}
	if st.Scorer == "" && len(m.Scorers) > 0 {
		st.Scorer = m.Scorers[0].Name
	}
	if opts.Scorer != "" && !slices.ContainsFunc(m.Scorers, func(s ScorerManifest) bool { return s.Name == opts.Scorer }) {
		return nil, noScorer(m, opts.Scorer)
	}
	acc := newAccumulator(m, st)
	if err := coordinates(ctx, store, name, acc.coordinate); err != nil {
		return nil, err
	}
	return acc.finish(ctx, store)
}

func checkBy(by string) error {
	switch by {
	case ByNone, ByAgent, ByHash, ByTask, ByEpoch:
		return nil
	}
	return &QueryError{Field: "by", Value: by, Reason: "expected agent, hash (agent configuration), task or epoch"}
}

// accumulator gathers a sweep's states, one coordinate at a time.
type accumulator struct {
	m      Manifest
	st     *Stats
	agents map[string]int // hash → manifest order
	retry  RetryPolicy
	groups map[string]*groupAcc
	order  []string
}

// groupAcc is what one group gathers.
type groupAcc struct {
	out     *GroupStats
	runs    []polyloop.RunSummary
	samples []runstats.ScoreSample
	pass    passTable
	first   int // sort key
}

func newAccumulator(m Manifest, st *Stats) *accumulator {
	a := &accumulator{m: m, st: st, agents: map[string]int{}, retry: m.Retry.withDefaults(), groups: map[string]*groupAcc{}}
	for i, ag := range m.Agents {
		a.agents[ag.Hash] = i
	}
	return a
}

// coordinate accounts for the attempts of one coordinate.
func (a *accumulator) coordinate(states []ledger.State) {
	e := states[0]
	order, ok := a.agents[e.AgentHash]
	if !ok || e.Epoch > a.m.Epochs {
		a.st.LeftOut += len(states)
		return
	}
	g := a.group(e.Entry, order)
	for _, s := range states {
		if s.Run != nil {
			g.runs = append(g.runs, *s.Run)
		}
	}
	a.outcome(g, states[len(states)-1])
}

// group returns the accumulator of the entry's group.
func (a *accumulator) group(e ledger.Entry, agentOrder int) *groupAcc {
	key, first := "all", 0
	switch a.st.By {
	case ByAgent:
		key, first = e.Agent, agentOrder
	case ByHash:
		key, first = e.AgentHash, agentOrder
	case ByTask:
		key, first = e.TaskID, len(a.order)
	case ByEpoch:
		key, first = strconv.Itoa(e.Epoch), e.Epoch
	}
	g, ok := a.groups[key]
	if !ok {
		g = &groupAcc{out: &GroupStats{Group: key, OutcomeStopReasons: map[polyloop.StopReason]int{},
			Attempts: map[polyloop.StopReason]map[string]int{}, Unsettled: []string{}, ScorerFailures: []ScorerFailure{}}, first: first}
		for _, r := range runstats.StopReasons {
			g.out.OutcomeStopReasons[r] = 0
		}
		a.groups[key] = g
		a.order = append(a.order, key)
	}
	return g
}

// outcome accounts for a coordinate's last attempt.
func (a *accumulator) outcome(g *groupAcc, last ledger.State) {
	out := g.out
	out.Outcomes++
	if !settled(last, a.retry) {
		out.Unsettled = append(out.Unsettled, last.RunID)
		return
	}
	r := last.Run
	out.Settled++
	out.OutcomeStopReasons[r.StopReason]++
	if out.Attempts[r.StopReason] == nil {
		out.Attempts[r.StopReason] = map[string]int{}
	}
	out.Attempts[r.StopReason][strconv.Itoa(last.Attempt)]++
	out.ScorerFailures = addFailures(out.ScorerFailures, last)
	v, ok := scoreOf(last, a.st.Scorer)
	if !ok {
		out.Unscored++
		return
	}
	out.Scored++
	g.samples = append(g.samples, runstats.ScoreSample{Cluster: last.TaskID, Value: v})
	g.pass.add(last.AgentHash, last.TaskID, v)
}

// finish computes every group's statistics.
func (a *accumulator) finish(ctx context.Context, store polyloop.Store) (*Stats, error) {
	keys := slices.Clone(a.order)
	sort.SliceStable(keys, func(i, j int) bool { return a.groups[keys[i]].first < a.groups[keys[j]].first })
	for _, k := range keys {
		g := a.groups[k]
		if err := runstats.FillTotals(ctx, store, g.runs); err != nil {
			return nil, err
		}
		out := g.out
		if rs := runstats.Compute(g.runs, runstats.KeyBy(runstats.ByNone, nil)); len(rs) > 0 {
			out.Runs = rs[0]
		} else { // outcomes without a run yet
			out.Runs = &runstats.Group{StopReasons: map[polyloop.StopReason]int{}, UnfinishedRuns: []string{}}
			for _, r := range runstats.StopReasons {
				out.Runs.StopReasons[r] = 0
			}
		}
		out.Runs.Group = k
		for _, r := range g.runs {
			out.TokensSum += r.Totals.Tokens()
			out.CostSum += r.Totals.CostUSD
			if r.Totals.TokensUnknown {
				out.TokensUnknownRuns++
			}
			if r.Totals.CostUnknown {
				out.CostUnknownRuns++
			}
		}
		out.Accuracy = runstats.Accuracy(g.samples)
		if a.m.Epochs > 1 {
			out.PassAtK, out.PassHatK = g.pass.estimates(a.m.Epochs, passEstimate), g.pass.estimates(a.m.Epochs, passHatEstimate)
		}
		a.st.Groups = append(a.st.Groups, out)
	}
	if a.st.Groups == nil {
		a.st.Groups = []*GroupStats{}
	}
	return a.st, nil
}
