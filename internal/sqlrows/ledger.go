package sqlrows

import (
	"time"

	"github.com/polyloop/polyloop/sweep/ledger"
)

// The sweep ledger's rows (ledger.Ledger), shared by the SQL stores like
// the runs rows: the sweeps, sweep_runs and scores tables have the same
// columns in both.

// EntryColumns are the columns of the sweep_runs table, in the order
// ScanEntry reads them and EntryArgs gives them.
const EntryColumns = `run_id, sweep, coord, agent, agent_hash, task_id, epoch, attempt, previous, task, task_digest`

// ScoreColumns are the columns of the scores table, in the order ScanScore
// reads them and ScoreArgs gives them.
const ScoreColumns = `run_id, scorer, version, description, value, explanation, grader_run_id, target_digest, scored_at, error`

// SweepInfoQuery lists the sweeps with their counts, newest first; its
// table names are those of SQLite (pgstore qualifies them).
const SweepInfoQuery = `SELECT s.name, s.updated_at, count(e.run_id), count(DISTINCT e.task_id), count(DISTINCT e.agent_hash), coalesce(max(e.epoch), 0)
	FROM sweeps AS s LEFT JOIN sweep_runs AS e ON e.sweep = s.name
	GROUP BY s.name, s.updated_at ORDER BY s.updated_at DESC, s.name`

// ChunkSize bounds the values one statement takes in an IN list or a
// multi-row insert, below both databases' limits on parameters.
const ChunkSize = 500

// ScanEntry reads a sweep_runs row.
func ScanEntry(row Row) (ledger.Entry, error) {
	var e ledger.Entry
	var task []byte
	err := row.Scan(&e.RunID, &e.Sweep, &e.Coord, &e.Agent, &e.AgentHash, &e.TaskID, &e.Epoch, &e.Attempt, &e.Previous, &task, &e.TaskDigest)
	e.Task = task
	return e, err
}

// EntryArgs are the values of an entry's row, in EntryColumns order.
func EntryArgs(e ledger.Entry) []any {
	return []any{e.RunID, e.Sweep, e.Coord, e.Agent, e.AgentHash, e.TaskID, e.Epoch, e.Attempt, e.Previous, []byte(e.Task), e.TaskDigest}
}

// ScanScore reads a scores row.
func ScanScore(row Row) (ledger.Score, error) {
	var s ledger.Score
	var at int64
	err := row.Scan(&s.RunID, &s.Scorer, &s.Version, &s.Description, &s.Value, &s.Explanation, &s.GraderRunID, &s.TargetDigest, &at, &s.Error)
	s.ScoredAt = time.Unix(0, at).UTC()
	return s, err
}

// ScoreArgs are the values of a score's row, in ScoreColumns order.
func ScoreArgs(s ledger.Score) []any {
	return []any{s.RunID, s.Scorer, s.Version, s.Description, s.Value, s.Explanation, s.GraderRunID, s.TargetDigest, s.ScoredAt.UnixNano(), s.Error}
}

// ScanInfo reads a row of SweepInfoQuery.
func ScanInfo(row Row) (ledger.Info, error) {
	var in ledger.Info
	var at int64
	err := row.Scan(&in.Name, &at, &in.Runs, &in.Tasks, &in.Agents, &in.Epochs)
	in.UpdatedAt = time.Unix(0, at).UTC()
	return in, err
}

// Chunks splits values into slices of at most ChunkSize.
func Chunks[T any](values []T) [][]T {
	var out [][]T
	for len(values) > ChunkSize {
		out = append(out, values[:ChunkSize])
		values = values[ChunkSize:]
	}
	if len(values) > 0 {
		out = append(out, values)
	}
	return out
}

// List is "p1, p2, …, pn": the placeholders of n values starting at
// argument number from (counted from 1).
func (d Dialect) List(from, n int) string {
	b := make([]byte, 0, n*4)
	for i := range n {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, d.Placeholder(from+i)...)
	}
	return string(b)
}
