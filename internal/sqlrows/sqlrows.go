// Package sqlrows holds the rows the SQL stores (sqlitestore, pgstore) keep,
// encoded and decoded in one place: a records row (seq, kind, data,
// checksum) back into a record, checked on the way (records.go); a run
// summary to and from a runs row; a RunFilter as a WHERE clause. The
// stores' schemas have the same columns; only their placeholders and column
// types differ, and the values here suit both drivers (database/sql and
// pgx): times as Unix nanoseconds, NULL for the zero time; totals as JSON
// text, NULL for none; checksums as int64, NULL for none.
package sqlrows

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/polyloop/polyloop"
)

// SummaryColumns are the columns of the runs table, in the order
// ScanSummary reads them and SummaryArgs gives them.
const SummaryColumns = `run_id, agent, snapshot_hash, started_at, updated_at, records, finished, stop_reason, totals, parent_run_id`

// Row is one row of a result: *sql.Row, *sql.Rows, pgx.Row, pgx.Rows.
type Row interface{ Scan(dest ...any) error }

// ScanSummary reads a runs row. Scan's error is returned as is (so that
// errors.Is sees a driver's no-rows error).
func ScanSummary(row Row) (polyloop.RunSummary, error) {
	var s polyloop.RunSummary
	var started, updated *int64
	var totals *string
	var stop string
	if err := row.Scan(&s.RunID, &s.Agent, &s.SnapshotHash, &started, &updated, &s.Records, &s.Finished, &stop, &totals, &s.ParentRunID); err != nil {
		return s, err
	}
	s.StartedAt, s.UpdatedAt = fromNanos(started), fromNanos(updated)
	s.StopReason = polyloop.StopReason(stop)
	if totals != nil {
		s.Totals = new(polyloop.Totals)
		if err := json.Unmarshal([]byte(*totals), s.Totals); err != nil {
			return s, fmt.Errorf("decoding totals of run %q: %w", s.RunID, err)
		}
	}
	return s, nil
}

// SummaryArgs are the values of a summary's runs row, in SummaryColumns
// order.
func SummaryArgs(s polyloop.RunSummary) ([]any, error) {
	var totals *string
	if s.Totals != nil {
		b, err := json.Marshal(s.Totals)
		if err != nil {
			return nil, fmt.Errorf("encoding totals: %w", err)
		}
		t := string(b)
		totals = &t
	}
	return []any{s.RunID, s.Agent, s.SnapshotHash, toNanos(s.StartedAt), toNanos(s.UpdatedAt),
		s.Records, s.Finished, string(s.StopReason), totals, s.ParentRunID}, nil
}

func toNanos(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	n := t.UnixNano()
	return &n
}

func fromNanos(n *int64) time.Time {
	if n == nil {
		return time.Time{}
	}
	return time.Unix(0, *n).UTC()
}

// Where turns a filter into a WHERE clause over the runs table (empty when
// the filter has no condition) and its arguments. placeholder gives the
// placeholder of the i-th argument, counted from 1 ("?" or "$i"). The
// filter's Limit is left to the caller.
func Where(f polyloop.RunFilter, placeholder func(i int) string) (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, arg any) {
		args = append(args, arg)
		conds = append(conds, cond+" "+placeholder(len(args)))
	}
	if f.Agent != "" {
		add("agent =", f.Agent)
	}
	if f.SnapshotHash != "" {
		add("snapshot_hash =", f.SnapshotHash)
	}
	if f.Finished != nil {
		add("finished =", *f.Finished)
	}
	if f.StopReason != "" {
		add("stop_reason =", string(f.StopReason))
	}
	if !f.StartedAfter.IsZero() {
		add("started_at >=", f.StartedAfter.UnixNano())
	}
	if !f.StartedBefore.IsZero() {
		add("started_at <", f.StartedBefore.UnixNano())
	}
	if f.ParentRunID != "" {
		add("parent_run_id =", f.ParentRunID)
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}
