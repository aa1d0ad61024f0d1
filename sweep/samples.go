package sweep

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/runstats"
	"github.com/polyloop/polyloop/sweep/ledger"
)

// Samples is a sweep's samples table: one row per run attempt.
type Samples struct {
	Sweep string `json:"sweep"`
	// Scorers are the sweep's scorers, in its order: the score columns.
	// Scorer is the query's (SampleQuery.Scorer, or the first).
	Scorers []string `json:"scorers"`
	Scorer  string   `json:"scorer,omitempty"`
	// Total counts the rows the query selects; Rows are all of them, or
	// with SampleQuery.Limit the window [Offset, Offset+Limit) of them.
	Total int      `json:"total"`
	Rows  []Sample `json:"rows"`
}

// The statuses of a sample.
const (
	SampleFinished   = "finished"
	SampleUnfinished = "unfinished"
	SampleNotStarted = "not_started"
)

// Sample is one run attempt of a sweep: its coordinate, how it ended, its
// scores with their explanations, and what it spent.
type Sample struct {
	RunID string `json:"run_id"`
	Agent string `json:"agent"`
	// AgentHash is the agent configuration hash (the snapshot without the
	// task, polyloop.Snapshot.AgentHash); SnapshotHash is the run's own,
	// task included ("" for a run not started).
	AgentHash    string `json:"agent_hash"`
	SnapshotHash string `json:"snapshot_hash,omitempty"`
	Task         string `json:"task"`
	Epoch        int    `json:"epoch"`
	Attempt      int    `json:"attempt"`
	// Last: the attempt is its coordinate's last, the outcome the
	// statistics count (an earlier attempt was retried).
	Last bool `json:"last"`
	// LeftOut: a run of an agent the sweep no longer has (its agent file
	// changed) or of an epoch beyond its epochs, which its statistics
	// leave out.
	LeftOut bool `json:"left_out"`
	// Status is SampleFinished, SampleUnfinished or SampleNotStarted;
	// StopReason is set for a finished run.
	Status     string              `json:"status"`
	StopReason polyloop.StopReason `json:"stop_reason,omitempty"`
	// Scores are the run's scores by scorer name: a scorer without a score
	// of the run is absent.
	Scores map[string]SampleScore `json:"scores"`
	// ScoreErrors are the errors of the scorers that could not score the
	// run, by scorer name (their last attempt; the command's standard
	// error's end included, at most MaxScoreError bytes each).
	ScoreErrors map[string]string `json:"score_errors,omitempty"`
	Steps       int               `json:"steps"`
	Tokens      int64             `json:"tokens"`
	// CostUSD is the known part of the run's cost; CostUnknown says part
	// of it is unknown (a model call of unknown outcome, a reply without
	// usage or price), so CostUSD is a lower bound. The same for tokens.
	CostUSD       float64 `json:"cost_usd"`
	CostUnknown   bool    `json:"cost_unknown"`
	TokensUnknown bool    `json:"tokens_unknown"`
	// StartedAt is the time of the run's first record; Duration runs from
	// it to its last record (for a resumed run, the time between
	// invocations included). Zero for a run not started.
	StartedAt time.Time     `json:"started_at,omitzero"`
	Duration  time.Duration `json:"duration_ns"`
}

// SampleScore is one scorer's score of a sample.
type SampleScore struct {
	Value       float64 `json:"score"`
	Explanation string  `json:"explanation,omitempty"`
	GraderRunID string  `json:"grader_run_id,omitempty"`
}

// The sort keys of SampleQuery.
var SampleSorts = []string{"run", "score", "task", "agent", "epoch", "steps", "tokens", "cost", "duration"}

// SampleQuery selects and orders the rows of a samples table.
type SampleQuery struct {
	// Failed keeps the samples that failed: finished with another stop
	// reason than completed, or scored below 1 by Scorer.
	Failed bool
	// Scorer is the scorer of Failed, Below and the "score" sort (default
	// the sweep's first).
	Scorer string
	// Below, when set, keeps the samples Scorer scored below it.
	Below *float64
	// Task and Agent, when set, keep the samples of that task id and agent
	// name.
	Task, Agent string
	// Sort is one of SampleSorts (default "run": by agent name, task id,
	// epoch and attempt); Desc reverses it. Ties keep that order, and
	// samples without a value of the key come last either way.
	Sort string
	Desc bool
	// Offset and Limit, when Limit > 0, keep the rows [Offset,
	// Offset+Limit) of the ordered selection: a page. ReadSamples then
	// holds at most 2×(Offset+Limit)+64 rows (and one page of the ledger)
	// at once, whatever the sweep's size (a page of a viewer); 0 keeps
	// every row.
	Offset, Limit int
}

// ReadSamples reads the samples table of the sweep name from the store:
// every entry of its ledger (the runs of agents it no longer has, and of
// epochs beyond its own, included, as the ledger holds them), with the
// runs' summaries and scores; only the logs of unfinished runs are read,
// for their totals. Then q selects and orders the rows. Errors:
// ledger.ErrNotFound for an unknown sweep, a store failure, a query that
// names a scorer or a sort the sweep does not have.
func ReadSamples(ctx context.Context, store Store, name string, q SampleQuery) (*Samples, error) {
	m, err := ReadManifest(ctx, store, name)
	if err != nil {
		return nil, err
	}
	out := &Samples{Sweep: name, Scorers: []string{}}
	for _, sc := range m.Scorers {
		out.Scorers = append(out.Scorers, sc.Name)
	}
	if err := q.check(out.Scorers); err != nil {
		return nil, err
	}
	out.Scorer = q.Scorer
	if q.Offset < 0 || q.Limit < 0 {
		return nil, &QueryError{Field: "offset", Value: fmt.Sprint(q.Offset, ",", q.Limit), Reason: "expected an offset and a limit, neither negative"}
	}
	current := map[string]bool{}
	for _, a := range m.Agents {
		current[a.Hash] = true
	}
	// The ledger's pages come in run id order, in which the attempts of a
	// coordinate are next to each other (its run ids are its coordinate,
	// ".a" and the attempt) but not in attempt order (".a10" comes before
	// ".a2"): a coordinate's attempts are complete once an entry of another
	// coordinate is read, and its last is the highest attempt. The rows
	// past a page's window can go.
	var rows []Sample
	var group []Sample
	flush := func() {
		last := 0
		for i := range group {
			if group[i].Attempt > group[last].Attempt {
				last = i
			}
		}
		for i := range group {
			group[i].Last = i == last
			if !q.keeps(group[i]) {
				continue
			}
			out.Total++
			rows = append(rows, group[i])
			heldSamples(len(rows))
			if keep := q.Offset + q.Limit; q.Limit > 0 && len(rows) >= 2*keep+windowSlack {
				rows = q.order(rows)[:keep] // the rows past the window never come back
			}
		}
		group = group[:0]
	}
	after, groupCoord := "", ""
	for {
		page, err := store.Page(ctx, name, after, statsPage)
		if err != nil {
			return nil, err
		}
		if err := fillTotals(ctx, store, page); err != nil {
			return nil, err
		}
		for _, st := range page {
			if groupCoord != st.Coord {
				flush()
			}
			r := sampleOf(st)
			r.LeftOut = !current[st.AgentHash] || st.Epoch > m.Epochs
			group, groupCoord = append(group, r), st.Coord
		}
		if len(page) < statsPage {
			break
		}
		after = page[len(page)-1].RunID
	}
	flush()
	rows = q.order(rows)
	if q.Limit > 0 {
		rows = rows[min(q.Offset, len(rows)):min(q.Offset+q.Limit, len(rows))]
	}
	out.Rows = rows
	return out, nil
}

// windowSlack is how many rows beyond 2×(Offset+Limit) a windowed
// ReadSamples collects before it sorts and drops those past the window.
const windowSlack = 64

// heldSamples is told how many rows ReadSamples holds after each page of
// the ledger (a test's hook: the bound of a windowed query).
var heldSamples = func(int) {}

// check refuses a query the sweep cannot answer.
func (q *SampleQuery) check(scorers []string) error {
	if q.Sort == "" {
		q.Sort = "run"
	}
	if !slices.Contains(SampleSorts, q.Sort) {
		return &QueryError{Field: "sort", Value: q.Sort, Reason: "expected one of " + strings.Join(SampleSorts, ", ")}
	}
	if q.Scorer == "" {
		if len(scorers) > 0 {
			q.Scorer = scorers[0]
		}
		return nil
	}
	if !slices.Contains(scorers, q.Scorer) {
		return &QueryError{Field: "scorer", Value: q.Scorer, Reason: "the sweep has no such scorer (its scorers: " + strings.Join(scorers, ", ") + ")"}
	}
	return nil
}

// fillTotals sets the totals of the unfinished runs from their logs.
func fillTotals(ctx context.Context, store polyloop.Store, states []ledger.State) error {
	var runs []polyloop.RunSummary
	var at []int
	for i, st := range states {
		if st.Run != nil && st.Run.Totals == nil {
			runs = append(runs, *st.Run)
			at = append(at, i)
		}
	}
	if err := runstats.FillTotals(ctx, store, runs); err != nil {
		return err
	}
	for j, i := range at {
		r := runs[j]
		states[i].Run = &r
	}
	return nil
}

func sampleOf(st ledger.State) Sample {
	s := Sample{RunID: st.RunID, Agent: st.Agent, AgentHash: st.AgentHash, Task: st.TaskID, Epoch: st.Epoch, Attempt: st.Attempt,
		Status: SampleNotStarted, Scores: map[string]SampleScore{}}
	for _, sc := range st.Scores {
		s.Scores[sc.Scorer] = SampleScore{Value: sc.Value, Explanation: sc.Explanation, GraderRunID: sc.GraderRunID}
	}
	for _, f := range st.Failed {
		if s.ScoreErrors == nil {
			s.ScoreErrors = map[string]string{}
		}
		s.ScoreErrors[f.Scorer] = f.Error
	}
	r := st.Run
	if r == nil {
		return s
	}
	s.SnapshotHash, s.StartedAt, s.Status = r.SnapshotHash, r.StartedAt, SampleUnfinished
	if r.Finished {
		s.Status, s.StopReason = SampleFinished, r.StopReason
	}
	if !r.StartedAt.IsZero() && r.UpdatedAt.After(r.StartedAt) {
		s.Duration = r.UpdatedAt.Sub(r.StartedAt)
	}
	if t := r.Totals; t != nil {
		s.Steps, s.Tokens, s.TokensUnknown, s.CostUSD, s.CostUnknown = t.Steps, t.Tokens(), t.TokensUnknown, t.CostUSD, t.CostUnknown
	}
	return s
}

// order sorts rows by the query's order: a total order (ties broken by
// the run order, then the run id), so that a sorted prefix of some rows
// is the prefix of the same rows sorted with any others.
func (q SampleQuery) order(kept []Sample) []Sample {
	slices.SortFunc(kept, func(a, b Sample) int {
		return cmp.Or(cmp.Compare(a.Agent, b.Agent), cmp.Compare(a.Task, b.Task), cmp.Compare(a.Epoch, b.Epoch),
			cmp.Compare(a.Attempt, b.Attempt), cmp.Compare(a.RunID, b.RunID))
	})
	if q.Sort == "run" {
		if q.Desc {
			slices.Reverse(kept)
		}
		return kept
	}
	key := q.sortKey()
	slices.SortStableFunc(kept, func(a, b Sample) int {
		ka, oka := key(a)
		kb, okb := key(b)
		switch {
		case !oka || !okb:
			return cmp.Compare(CountTrue(!oka), CountTrue(!okb)) // without a value: last
		case q.Desc:
			return ka.compare(kb) * -1
		}
		return ka.compare(kb)
	})
	return kept
}

func (q SampleQuery) keeps(r Sample) bool {
	sc, scored := r.Scores[q.Scorer]
	switch {
	case q.Task != "" && r.Task != q.Task, q.Agent != "" && r.Agent != q.Agent:
		return false
	case q.Below != nil && (!scored || sc.Value >= *q.Below):
		return false
	case q.Failed:
		return r.Status == SampleFinished && (r.StopReason != polyloop.StopCompleted || (scored && sc.Value < 1))
	}
	return true
}

// sortValue is a row's value of a sort key: a number or a text.
type sortValue struct {
	n float64
	s string
}

func (a sortValue) compare(b sortValue) int {
	if c := cmp.Compare(a.n, b.n); c != 0 {
		return c
	}
	return cmp.Compare(a.s, b.s)
}

// sortKey is the value of q.Sort (not "run") of a row, and whether it
// has one.
func (q SampleQuery) sortKey() func(Sample) (sortValue, bool) {
	switch q.Sort {
	case "score":
		return func(r Sample) (sortValue, bool) {
			sc, ok := r.Scores[q.Scorer]
			return sortValue{n: sc.Value}, ok
		}
	case "task":
		return func(r Sample) (sortValue, bool) { return sortValue{s: r.Task}, true }
	case "agent":
		return func(r Sample) (sortValue, bool) { return sortValue{s: r.Agent}, true }
	case "epoch":
		return func(r Sample) (sortValue, bool) { return sortValue{n: float64(r.Epoch)}, true }
	case "steps":
		return func(r Sample) (sortValue, bool) { return sortValue{n: float64(r.Steps)}, r.Status != SampleNotStarted }
	case "tokens":
		return func(r Sample) (sortValue, bool) { return sortValue{n: float64(r.Tokens)}, r.Status != SampleNotStarted }
	case "cost":
		return func(r Sample) (sortValue, bool) { return sortValue{n: r.CostUSD}, r.Status != SampleNotStarted }
	case "duration":
		return func(r Sample) (sortValue, bool) {
			return sortValue{n: float64(r.Duration)}, r.Status != SampleNotStarted
		}
	}
	return nil
}

// CountTrue is how many of bs are true.
func CountTrue(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
