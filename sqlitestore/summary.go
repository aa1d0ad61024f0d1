package sqlitestore

import (
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/sqlrows"
)

// A run's summary lives in two places. Its next seq and its last record's
// time (RunSummary.Records and UpdatedAt) are read from the tail of its log
// — the last row of records under its primary key, whose at column holds
// the record's time — so that an Append that changes nothing else writes
// no runs row: a commit writes the records' pages only. The runs row holds
// the rest, written at the run's first Append and whenever one of those
// fields changes (RunStarted, ConfigOverride, RunFinished); its records and
// updated_at columns are as of that write, the fallback for a log whose
// last record was written before the at column (schema 6).
//
// The runs table's indexes (schema.go) hold run_id, started_at, agent and
// parent_run_id. Rewriting a row with INSERT OR REPLACE deletes and
// reinserts its entries in every index; an UPDATE of the other columns
// changes the row's page only: the writer uses it whenever the row exists
// and its indexed columns keep their values.

// summaryColumns read a summary in sqlrows.SummaryColumns order from the
// runs table, the next seq and the time taken from the log's tail.
const summaryColumns = `run_id, agent, snapshot_hash, started_at,
	coalesce((SELECT t.at FROM records AS t WHERE t.run_id = runs.run_id ORDER BY t.seq DESC LIMIT 1), updated_at),
	coalesce((SELECT max(t.seq) + 1 FROM records AS t WHERE t.run_id = runs.run_id), records),
	finished, stop_reason, totals, parent_run_id, task`

// updateSummary sets the columns no index holds.
const updateSummary = `UPDATE runs SET snapshot_hash = ?, updated_at = ?, records = ?, finished = ?, stop_reason = ?, totals = ?, task = ? WHERE run_id = ?`

// replaceSummary writes the whole row.
const replaceSummary = `INSERT OR REPLACE INTO runs (` + sqlrows.SummaryColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// rowWrite says how the runs row of prev (what the database holds; Records
// 0 for no row) must be written for next: not at all when only the next
// seq and the time changed, an UPDATE when the indexed columns keep their
// values, the whole row otherwise. When the new last record's time is
// NULL in the log (zero, or out of sqlrows.ToNanos's range), the read
// falls back to the row's updated_at: the row is written, so that it holds
// next's.
type rowWrite int

const (
	rowKeep rowWrite = iota
	rowUpdate
	rowReplace
)

func summaryWrite(prev, next polyloop.RunSummary) rowWrite {
	if prev.Records == 0 || prev.Agent != next.Agent || !prev.StartedAt.Equal(next.StartedAt) ||
		prev.StartedAt.IsZero() != next.StartedAt.IsZero() || prev.ParentRunID != next.ParentRunID || prev.RunID != next.RunID {
		return rowReplace
	}
	if prev.SnapshotHash != next.SnapshotHash || prev.Finished != next.Finished || prev.StopReason != next.StopReason ||
		prev.Task != next.Task || !sameTotals(prev.Totals, next.Totals) {
		return rowUpdate
	}
	if sqlrows.ToNanos(next.UpdatedAt) == nil {
		return rowUpdate
	}
	return rowKeep
}

func sameTotals(a, b *polyloop.Totals) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// updateArgs are the arguments of updateSummary, taken from the
// arguments of replaceSummary (sqlrows.SummaryArgs, in SummaryColumns
// order).
func updateArgs(all []any) []any {
	return []any{all[2], all[4], all[5], all[6], all[7], all[8], all[10], all[0]}
}
