package sqlitestore

import (
	"context"
	"fmt"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/sqlrows"
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
		r, err := sqlrows.Record(seq, data)
		if err != nil {
			return l, fmt.Errorf("sqlitestore: run %q: %w", runID, err)
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

// ListRuns returns the summaries of the runs that match filter, from the
// runs table: no log is read. They are ordered as pgstore orders them: runs
// without a start time (whose log lacks RunStarted) first — SQLite sorts
// NULL first — then by start time, ties broken by run id compared byte by
// byte (SQLite's default BINARY collation).
func (s *Store) ListRuns(ctx context.Context, filter polyloop.RunFilter) ([]polyloop.RunSummary, error) {
	if err := s.usable(ctx, "list runs"); err != nil {
		return nil, err
	}
	var out []polyloop.RunSummary
	for _, q := range dialect.Listing(`SELECT `+sqlrows.SummaryColumns+` FROM runs`, filter) {
		if filter.Limit > 0 && len(out) >= filter.Limit {
			break
		}
		var err error
		if out, err = s.list(ctx, q, filter.Limit-len(out), out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// list appends the rows of one listing query, at most limit when positive.
func (s *Store) list(ctx context.Context, q sqlrows.Query, limit int, out []polyloop.RunSummary) ([]polyloop.RunSummary, error) {
	if limit > 0 {
		q.SQL += fmt.Sprintf(" LIMIT %d", limit)
	}
	rows, err := s.read.QueryContext(ctx, q.SQL, q.Args...)
	if err != nil {
		return nil, s.readError(ctx, "", err)
	}
	defer rows.Close()
	for rows.Next() {
		sum, err := sqlrows.ScanSummary(rows)
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

// dialect is SQLite's SQL for the runs table.
var dialect = sqlrows.Dialect{Placeholder: func(int) string { return "?" }, Binary: "COLLATE BINARY", Contains: "instr(%s, %s) > 0"}
