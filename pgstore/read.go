package pgstore

import (
	"context"
	"fmt"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/sqlrows"
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
		r, err := sqlrows.Record(seq, data)
		if err != nil {
			return l, fmt.Errorf("pgstore: run %q: %w", runID, err)
		}
		l.Records = append(l.Records, r)
	}
	if err := rows.Err(); err != nil {
		return l, interpretError(ctx, fmt.Sprintf("read run %q", runID), err)
	}
	return l, nil
}

// ListRuns returns the summaries of the runs that match filter, from the
// runs table: no log is read. They are ordered as sqlitestore orders them:
// runs without a start time (whose log lacks RunStarted) first, then by
// start time, ties broken by run id compared byte by byte (collation "C",
// whatever the database's collation).
func (s *Store) ListRuns(ctx context.Context, filter polyloop.RunFilter) ([]polyloop.RunSummary, error) {
	var out []polyloop.RunSummary
	for _, q := range dialect.Listing(s.q.list, filter) {
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
	rows, err := s.pool.Query(ctx, q.SQL, q.Args...)
	if err != nil {
		return nil, interpretError(ctx, "list runs", err)
	}
	defer rows.Close()
	for rows.Next() {
		sum, err := sqlrows.ScanSummary(rows)
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

// dialect is PostgreSQL's SQL for the runs table.
var dialect = sqlrows.Dialect{Placeholder: func(i int) string { return fmt.Sprintf("$%d", i) }, Binary: `COLLATE "C"`, Contains: "strpos(%s, %s) > 0"}
