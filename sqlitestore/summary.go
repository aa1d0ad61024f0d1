package sqlitestore

import (
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/sqlrows"
)

// The runs table's indexes (schema.go) hold run_id, started_at, agent and
// parent_run_id. Rewriting a row with INSERT OR REPLACE deletes and
// reinserts its entries in every index; an UPDATE of the other columns
// changes the row's page only. The writer uses the UPDATE whenever the row
// exists and its indexed columns keep their values, which is every Append
// of a run but its first.

// updateSummary sets the columns no index holds.
const updateSummary = `UPDATE runs SET snapshot_hash = ?, updated_at = ?, records = ?, finished = ?, stop_reason = ?, totals = ?, task = ? WHERE run_id = ?`

// replaceSummary writes the whole row.
const replaceSummary = `INSERT OR REPLACE INTO runs (` + sqlrows.SummaryColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// indexedSame reports whether the row of prev exists and next keeps the
// values of its indexed columns.
func indexedSame(prev, next polyloop.RunSummary) bool {
	return prev.Records > 0 && prev.Agent == next.Agent && prev.StartedAt.Equal(next.StartedAt) &&
		prev.StartedAt.IsZero() == next.StartedAt.IsZero() && prev.ParentRunID == next.ParentRunID
}

// updateArgs are the arguments of updateSummary, taken from the
// arguments of replaceSummary (sqlrows.SummaryArgs, in SummaryColumns
// order).
func updateArgs(all []any) []any {
	return []any{all[2], all[4], all[5], all[6], all[7], all[8], all[10], all[0]}
}
