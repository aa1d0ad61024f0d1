package sweep

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/polyloop/polyloop/internal/runstats"
	"github.com/polyloop/polyloop/sweep/ledger"
)

// Comparison is the paired comparison of two agents of a sweep on the
// tasks and epochs both have a scored outcome of (each agent's last
// attempt, as in the statistics): a pair is one task and epoch, its
// difference A's score minus B's.
type Comparison struct {
	Sweep  string `json:"sweep"`
	Scorer string `json:"scorer"`
	A      string `json:"a"`
	B      string `json:"b"`
	// Pairs counts the paired outcomes; UnpairedA and UnpairedB the
	// scored outcomes of one agent whose task and epoch the other has no
	// scored outcome of (not run, unsettled, or unscored), left out.
	Pairs     int `json:"pairs"`
	UnpairedA int `json:"unpaired_a"`
	UnpairedB int `json:"unpaired_b"`
	// ScorerFailures counts the settled outcomes of A and B the scorer
	// could not score (left out, as unscored), with the first error: why
	// a comparison has no pair when the scorer failed everywhere.
	ScorerFailures ScorerFailure `json:"scorer_failures"`
	// MeanA and MeanB are the agents' mean scores over the pairs.
	MeanA float64 `json:"mean_a"`
	MeanB float64 `json:"mean_b"`
	// Difference is the mean of the pairs' differences (MeanA − MeanB)
	// with its standard error clustered by task — the epochs of a task
	// are not independent — and its 95% interval (runstats.Accuracy over
	// the differences); nil without a pair.
	Difference *runstats.Estimate `json:"difference"`
	// WinsA and WinsB count the tasks whose mean difference favours A or
	// B; Ties those where it is zero.
	WinsA int `json:"wins_a"`
	WinsB int `json:"wins_b"`
	Ties  int `json:"ties"`
	// Tasks are the per-task paired differences, in the order the ledger
	// holds the tasks.
	Tasks []TaskDifference `json:"tasks"`
	// PassA and PassB are each agent's pass@k and pass^k over all its
	// scored outcomes (paired or not), as stats --by agent has them.
	PassA AgentPass `json:"pass_a"`
	PassB AgentPass `json:"pass_b"`
}

// TaskDifference is the paired difference of two agents on one task.
type TaskDifference struct {
	Task  string `json:"task"`
	Pairs int    `json:"pairs"`
	// MeanA and MeanB are the agents' mean scores over the task's pairs,
	// Difference their difference.
	MeanA      float64 `json:"mean_a"`
	MeanB      float64 `json:"mean_b"`
	Difference float64 `json:"difference"`
}

// AgentPass is an agent's pass@k and pass^k.
type AgentPass struct {
	PassAtK  []PassAtK `json:"pass_at_k,omitempty"`
	PassHatK []PassAtK `json:"pass_hat_k,omitempty"`
}

// tieTolerance is how close to zero a task's mean difference is a tie (a
// sum of scores such as 0.1 is not exact).
const tieTolerance = 1e-12

// Compare compares agents a and b (agent names of the sweep) on the
// sweep's scorer (default its first). Errors: ledger.ErrNotFound for an
// unknown sweep, a store failure, an agent or a scorer the sweep does not
// have, a and b the same agent.
func Compare(ctx context.Context, store Store, name, a, b, scorer string) (*Comparison, error) {
	m, err := ReadManifest(ctx, store, name)
	if err != nil {
		return nil, err
	}
	ha, hb, err := comparedAgents(m, a, b)
	if err != nil {
		return nil, err
	}
	if scorer == "" && len(m.Scorers) > 0 {
		scorer = m.Scorers[0].Name
	}
	if !slices.ContainsFunc(m.Scorers, func(s ScorerManifest) bool { return s.Name == scorer }) {
		return nil, noScorer(m, scorer)
	}
	c := &Comparison{Sweep: name, Scorer: scorer, A: a, B: b, Tasks: []TaskDifference{}}
	retry := m.Retry.withDefaults()
	type key struct {
		task  string
		epoch int
	}
	scores := map[string]map[key]float64{ha: {}, hb: {}}
	var tasks []string
	var passA, passB passTable
	var failed []ScorerFailure
	err = coordinates(ctx, store, name, func(states []ledger.State) {
		last := states[len(states)-1]
		by, ok := scores[last.AgentHash]
		if !ok || last.Epoch > m.Epochs || !settled(last, retry) {
			return
		}
		v, ok := scoreOf(last, scorer)
		if !ok {
			failed = addFailures(failed, last)
			return
		}
		by[key{last.TaskID, last.Epoch}] = v
		if !slices.Contains(tasks, last.TaskID) {
			tasks = append(tasks, last.TaskID)
		}
		if last.AgentHash == ha {
			passA.add(ha, last.TaskID, v)
		} else {
			passB.add(hb, last.TaskID, v)
		}
	})
	if err != nil {
		return nil, err
	}
	c.ScorerFailures = failuresOf(failed, scorer)
	c.pair(tasks, m.Epochs, func(task string, epoch int) (float64, bool, float64, bool) {
		va, oka := scores[ha][key{task, epoch}]
		vb, okb := scores[hb][key{task, epoch}]
		return va, oka, vb, okb
	})
	if m.Epochs > 1 {
		c.PassA = AgentPass{passA.estimates(m.Epochs, passEstimate), passA.estimates(m.Epochs, passHatEstimate)}
		c.PassB = AgentPass{passB.estimates(m.Epochs, passEstimate), passB.estimates(m.Epochs, passHatEstimate)}
	}
	return c, nil
}

// comparedAgents are the hashes of the agents named a and b.
func comparedAgents(m Manifest, a, b string) (string, string, error) {
	hash := func(name string) (string, error) {
		for _, ag := range m.Agents {
			if ag.Name == name {
				return ag.Hash, nil
			}
		}
		var names []string
		for _, ag := range m.Agents {
			names = append(names, ag.Name)
		}
		return "", &QueryError{Field: "compare", Value: name, Reason: fmt.Sprintf("sweep %s has no such agent (its agents: %s)", m.Name, strings.Join(names, ", "))}
	}
	if a == b {
		return "", "", &QueryError{Field: "compare", Value: a + " " + b, Reason: "two different agents are compared"}
	}
	ha, err := hash(a)
	if err != nil {
		return "", "", err
	}
	hb, err := hash(b)
	return ha, hb, err
}

// pair computes the comparison from the scores of each task and epoch.
func (c *Comparison) pair(tasks []string, epochs int, at func(task string, epoch int) (va float64, oka bool, vb float64, okb bool)) {
	var diffs []runstats.ScoreSample
	var sumA, sumB float64
	for _, task := range tasks {
		td := TaskDifference{Task: task}
		for epoch := 1; epoch <= epochs; epoch++ {
			va, oka, vb, okb := at(task, epoch)
			switch {
			case oka && okb:
				td.Pairs++
				td.MeanA += va
				td.MeanB += vb
				diffs = append(diffs, runstats.ScoreSample{Cluster: task, Value: va - vb})
			case oka:
				c.UnpairedA++
			case okb:
				c.UnpairedB++
			}
		}
		if td.Pairs == 0 {
			continue
		}
		sumA, sumB = sumA+td.MeanA, sumB+td.MeanB
		td.MeanA /= float64(td.Pairs)
		td.MeanB /= float64(td.Pairs)
		td.Difference = td.MeanA - td.MeanB
		switch {
		case math.Abs(td.Difference) <= tieTolerance:
			c.Ties++
		case td.Difference > 0:
			c.WinsA++
		default:
			c.WinsB++
		}
		c.Tasks = append(c.Tasks, td)
	}
	c.Pairs = len(diffs)
	if c.Pairs > 0 {
		c.MeanA, c.MeanB = sumA/float64(c.Pairs), sumB/float64(c.Pairs)
	}
	c.Difference = runstats.Accuracy(diffs)
}
