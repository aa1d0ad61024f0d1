package sqlitestore

import (
	"context"
	"fmt"
	"strings"

	"github.com/polyloop/polyloop"
)

// ReadLog returns the run's records in seq order; a run without records
// gives an empty log and a nil error. It reads the committed state of the
// file, including what other processes committed.
func (s *Store) ReadLog(ctx context.Context, runID string) (polyloop.RunLog, error) {
	l := polyloop.RunLog{RunID: runID}
	if err := s.usable(ctx, "read run "+runID); err != nil {
		return l, err
	}
	rows, err := s.read.QueryContext(ctx, `SELECT seq, data FROM records WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return l, s.readError(ctx, runID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		var data []byte
		if err := rows.Scan(&seq, &data); err != nil {
			return l, s.readError(ctx, runID, err)
		}
		var r polyloop.Record
		if err := r.UnmarshalJSON(data); err != nil {
			return l, fmt.Errorf("sqlitestore: run %q: decoding record %d: %w", runID, seq, err)
		}
		if r.Seq != seq {
			return l, fmt.Errorf("sqlitestore: run %q: record stored at seq %d says seq %d", runID, seq, r.Seq)
		}
		l.Records = append(l.Records, r)
	}
	if err := rows.Err(); err != nil {
		return l, s.readError(ctx, runID, err)
	}
	return l, nil
}

// usable fails when the store is closed or ctx is done.
func (s *Store) usable(ctx context.Context, what string) error {
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", what, err)
	}
	return nil
}

// readError keeps ctx's error visible when a query failed because ctx ended.
func (s *Store) readError(ctx context.Context, runID string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("sqlitestore: read run %q: %w (%v)", runID, cerr, err)
	}
	return interpretError(fmt.Sprintf("read run %q", runID), err)
}

// ListRuns returns the summaries of the runs that match filter, ordered by
// start time (then run id), from the runs table: no log is read.
func (s *Store) ListRuns(ctx context.Context, filter polyloop.RunFilter) ([]polyloop.RunSummary, error) {
	if err := s.usable(ctx, "list runs"); err != nil {
		return nil, err
	}
	where, args := filterSQL(filter)
	q := `SELECT ` + summaryColumns + ` FROM runs` + where + ` ORDER BY started_at, run_id`
	if filter.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", filter.Limit)
	}
	rows, err := s.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.readError(ctx, "", err)
	}
	defer rows.Close()
	var out []polyloop.RunSummary
	for rows.Next() {
		sum, err := scanSummary(rows)
		if err != nil {
			return nil, s.readError(ctx, "", err)
		}
		out = append(out, sum)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readError(ctx, "", err)
	}
	return out, nil
}

// filterSQL turns a filter into a WHERE clause and its arguments.
func filterSQL(f polyloop.RunFilter) (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, arg any) {
		conds = append(conds, cond)
		args = append(args, arg)
	}
	if f.Agent != "" {
		add("agent = ?", f.Agent)
	}
	if f.SnapshotHash != "" {
		add("snapshot_hash = ?", f.SnapshotHash)
	}
	if f.Finished != nil {
		add("finished = ?", *f.Finished)
	}
	if f.StopReason != "" {
		add("stop_reason = ?", string(f.StopReason))
	}
	if !f.StartedAfter.IsZero() {
		add("started_at >= ?", f.StartedAfter.UnixNano())
	}
	if !f.StartedBefore.IsZero() {
		add("started_at < ?", f.StartedBefore.UnixNano())
	}
	if f.ParentRunID != "" {
		add("parent_run_id = ?", f.ParentRunID)
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}
