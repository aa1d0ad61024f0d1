package pgstore

import (
	"context"
	"fmt"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/sqlrows"
)

// ReadRows returns the run's committed rows in seq order, as they were
// appended (see polyloop.Store); a run without rows gives none and a nil
// error. Rows written before the store kept checksums come back Unchecked.
func (s *Store) ReadRows(ctx context.Context, runID string) ([]polyloop.Row, error) {
	return s.readRows(ctx, runID, s.q.read, runID)
}

// ReadRowsFrom implements polyloop.Store's ranged read: at most limit of
// the run's committed rows from seq from on, in seq order, in one
// statement (one snapshot of the database: whole Appends), as ReadRows
// gives them.
func (s *Store) ReadRowsFrom(ctx context.Context, runID string, from int64, limit int) ([]polyloop.Row, error) {
	if from < 0 || limit < 1 {
		return nil, fmt.Errorf("pgstore: read run %q: %d rows from seq %d", runID, limit, from)
	}
	return s.readRows(ctx, runID, s.q.readFrom, runID, from, limit)
}

// readRows runs a query of a run's rows; it returns no rows with an error.
func (s *Store) readRows(ctx context.Context, runID, query string, args ...any) ([]polyloop.Row, error) {
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, interpretError(ctx, fmt.Sprintf("read run %q", runID), err)
	}
	defer rows.Close()
	var out []polyloop.Row
	for rows.Next() {
		row, err := sqlrows.ScanSharedRecord(rows)
		if err != nil {
			return nil, interpretError(ctx, fmt.Sprintf("read run %q", runID), err)
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError(ctx, fmt.Sprintf("read run %q", runID), err)
	}
	return out, nil
}

// SharesSnapshots implements polyloop.SnapshotKeeper: a configuration
// snapshot is kept once in the snapshots table, and the run_started row
// of each run refers to it.
func (s *Store) SharesSnapshots() {}

// RecordsWithoutChecksum counts the run's records stored without a
// checksum: written before the store kept them (schema versions up to 3;
// checksums arrived with version 4), they are read unchecked.
func (s *Store) RecordsWithoutChecksum(ctx context.Context, runID string) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, s.q.unchecked, runID).Scan(&n); err != nil {
		return 0, interpretError(ctx, fmt.Sprintf("count unchecked records of run %q", runID), err)
	}
	return n, nil
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
