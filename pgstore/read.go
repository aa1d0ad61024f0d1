package pgstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/polyloop/polyloop"
)

// ReadLog returns the run's committed records in seq order; a run without
// records gives an empty log and a nil error.
func (s *Store) ReadLog(ctx context.Context, runID string) (polyloop.RunLog, error) {
	l := polyloop.RunLog{RunID: runID}
	rows, err := s.pool.Query(ctx, s.q.read, runID)
	if err != nil {
		return l, interpretError(ctx, fmt.Sprintf("read run %q", runID), err)
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		var data []byte
		if err := rows.Scan(&seq, &data); err != nil {
			return l, interpretError(ctx, fmt.Sprintf("read run %q", runID), err)
		}
		var r polyloop.Record
		if err := r.UnmarshalJSON(data); err != nil {
			return l, fmt.Errorf("pgstore: run %q: decoding record %d: %w", runID, seq, err)
		}
		if r.Seq != seq {
			return l, fmt.Errorf("pgstore: run %q: record stored at seq %d says seq %d", runID, seq, r.Seq)
		}
		l.Records = append(l.Records, r)
	}
	if err := rows.Err(); err != nil {
		return l, interpretError(ctx, fmt.Sprintf("read run %q", runID), err)
	}
	return l, nil
}

// ListRuns returns the summaries of the runs that match filter, ordered by
// start time (then run id), from the runs table: no log is read.
func (s *Store) ListRuns(ctx context.Context, filter polyloop.RunFilter) ([]polyloop.RunSummary, error) {
	where, args := filterSQL(filter)
	q := s.q.list + where + ` ORDER BY started_at, run_id`
	if filter.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", filter.Limit)
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, interpretError(ctx, "list runs", err)
	}
	defer rows.Close()
	var out []polyloop.RunSummary
	for rows.Next() {
		sum, err := scanSummary(rows)
		if err != nil {
			return nil, interpretError(ctx, "list runs", err)
		}
		out = append(out, sum)
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError(ctx, "list runs", err)
	}
	return out, nil
}

// filterSQL turns a filter into a WHERE clause and its arguments.
func filterSQL(f polyloop.RunFilter) (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, arg any) {
		args = append(args, arg)
		conds = append(conds, fmt.Sprintf(cond, len(args)))
	}
	if f.Agent != "" {
		add("agent = $%d", f.Agent)
	}
	if f.SnapshotHash != "" {
		add("snapshot_hash = $%d", f.SnapshotHash)
	}
	if f.Finished != nil {
		add("finished = $%d", *f.Finished)
	}
	if f.StopReason != "" {
		add("stop_reason = $%d", string(f.StopReason))
	}
	if !f.StartedAfter.IsZero() {
		add("started_at >= $%d", f.StartedAfter.UnixNano())
	}
	if !f.StartedBefore.IsZero() {
		add("started_at < $%d", f.StartedBefore.UnixNano())
	}
	if f.ParentRunID != "" {
		add("parent_run_id = $%d", f.ParentRunID)
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}
