package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/sqlrows"
)

// ReadRows returns the run's rows in seq order, as they were appended (see
// polyloop.Store); a run without rows gives none and a nil error. It reads
// the committed state of the file, including what other processes
// committed. Rows written before the store kept checksums come back
// Unchecked. A part of the file that SQLite finds damaged makes the error
// a *polyloop.CorruptLogError naming the run.
func (s *Store) ReadRows(ctx context.Context, runID string) ([]polyloop.Row, error) {
	if err := s.usable(ctx, "read run "+runID); err != nil {
		return nil, err
	}
	return readRows(ctx, s.read, "crc", !s.noShared, runID, 0, -1)
}

// ReadRowsFrom implements polyloop.Store's ranged read: at most limit of
// the run's rows from seq from on, in seq order, in one statement (one
// snapshot of the file: whole Appends), as ReadRows gives them.
func (s *Store) ReadRowsFrom(ctx context.Context, runID string, from int64, limit int) ([]polyloop.Row, error) {
	if err := s.usable(ctx, "read run "+runID); err != nil {
		return nil, err
	}
	if from < 0 || limit < 1 {
		return nil, fmt.Errorf("sqlitestore: read run %q: %d rows from seq %d", runID, limit, from)
	}
	return readRows(ctx, s.read, "crc", !s.noShared, runID, from, limit)
}

// SharesSnapshots implements polyloop.SnapshotKeeper: a configuration
// snapshot is kept once in the snapshots table, and the run_started row
// of each run refers to it.
func (s *Store) SharesSnapshots() {}

// RecordsWithoutChecksum counts the run's records stored without a
// checksum: written before the store kept them (schema version 2), they are
// read unchecked.
func (s *Store) RecordsWithoutChecksum(ctx context.Context, runID string) (int64, error) {
	if err := s.usable(ctx, "read run "+runID); err != nil {
		return 0, err
	}
	return countUnchecked(ctx, s.read, runID)
}

// readRows reads a run's rows from db; crc is the checksum column, or NULL
// in a file of a schema without one; shared, that the file has the
// snapshots table (schema 8), whose snapshots come with the rows that
// refer to them. It reads the rows from seq from on, at most limit of
// them (-1: all). With an error, it returns the rows read before it when
// it reads them all (salvage keeps them), none when it reads a chunk.
func readRows(ctx context.Context, db *sql.DB, crc string, shared bool, runID string, from int64, limit int) ([]polyloop.Row, error) {
	rows, err := db.QueryContext(ctx, `SELECT seq, kind, data, `+crc+` FROM records WHERE run_id = ? AND seq >= ? ORDER BY seq LIMIT ?`, runID, from, limit)
	if err != nil {
		return nil, readError(ctx, runID, from, err)
	}
	defer rows.Close()
	var out []polyloop.Row
	fail := func(err error) ([]polyloop.Row, error) {
		err = readError(ctx, runID, from+int64(len(out)), err)
		if limit >= 0 {
			return nil, err
		}
		return out, err
	}
	for rows.Next() {
		row, err := sqlrows.ScanRecord(rows)
		if err != nil {
			return fail(err)
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	rows.Close()
	if shared && len(out) > 0 {
		return withShared(ctx, db, runID, out)
	}
	return out, nil
}

// withShared sets the Shared snapshot of the rows that refer to one (the
// run_started row's, one per run), read apart from the records so that
// the rows are scanned without a join or a column more: SQLite walks the
// run's rows for the few whose snap is set.
func withShared(ctx context.Context, db *sql.DB, runID string, out []polyloop.Row) ([]polyloop.Row, error) {
	from, to := out[0].Seq, out[len(out)-1].Seq
	rows, err := db.QueryContext(ctx, `SELECT r.seq, r.snap, s.data FROM records r LEFT JOIN snapshots s ON s.ref = r.snap
		WHERE r.run_id = ? AND r.seq >= ? AND r.seq <= ? AND r.snap IS NOT NULL`, runID, from, to)
	if err != nil {
		return nil, readError(ctx, runID, 0, err)
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		sh := &polyloop.SharedSnapshot{}
		if err := rows.Scan(&seq, &sh.Ref, &sh.Data); err != nil { // no data: the reader reports the row corrupt
			return nil, readError(ctx, runID, seq, err)
		}
		if i := seq - from; i >= 0 && i < int64(len(out)) && out[i].Seq == seq {
			out[i].Shared = sh
		}
	}
	if err := rows.Err(); err != nil {
		return nil, readError(ctx, runID, 0, err)
	}
	return out, nil
}

func countUnchecked(ctx context.Context, db *sql.DB, runID string) (int64, error) {
	var n int64
	err := db.QueryRowContext(ctx, `SELECT count(*) FROM records WHERE run_id = ? AND crc IS NULL`, runID).Scan(&n)
	if err != nil {
		return 0, readError(ctx, runID, 0, err)
	}
	return n, nil
}

// usable fails when the store is closed or ctx is done.
func (s *Store) usable(ctx context.Context, what string) error {
	if s.c.isClosed() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlitestore: %s: %w", what, err)
	}
	return nil
}

// readError keeps ctx's error visible when a query failed because ctx
// ended. SQLite's report of a damaged file, met while reading the run's
// record at seq next, is a corrupt log from there on.
func readError(ctx context.Context, runID string, next int64, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("sqlitestore: read run %q: %w (%v)", runID, cerr, err)
	}
	if damaged(err) && runID != "" {
		return &polyloop.CorruptLogError{RunID: runID, Seq: -1,
			Reason: fmt.Sprintf("the SQLite database file is damaged from record %d on: %v", next, err)}
	}
	return interpretError(fmt.Sprintf("read run %q", runID), err)
}

// ListRuns returns the summaries of the runs that match filter, from the
// runs table and the tail of each log (summary.go): no log is read. They are ordered as pgstore orders them: runs
// without a start time (whose log lacks RunStarted) first — SQLite sorts
// NULL first — then by start time, ties broken by run id compared byte by
// byte (SQLite's default BINARY collation).
func (s *Store) ListRuns(ctx context.Context, filter polyloop.RunFilter) ([]polyloop.RunSummary, error) {
	if err := s.usable(ctx, "list runs"); err != nil {
		return nil, err
	}
	var out []polyloop.RunSummary
	for _, q := range dialect.Listing(`SELECT `+summaryColumns+` FROM runs`, filter) {
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
		return nil, readError(ctx, "", 0, err)
	}
	defer rows.Close()
	for rows.Next() {
		sum, err := sqlrows.ScanSummary(rows)
		if err != nil {
			return nil, readError(ctx, "", 0, err)
		}
		out = append(out, sum)
	}
	if err := rows.Err(); err != nil {
		return nil, readError(ctx, "", 0, err)
	}
	return out, nil
}

// dialect is SQLite's SQL for the runs table.
var dialect = sqlrows.Dialect{Placeholder: func(int) string { return "?" }, Binary: "COLLATE BINARY", Contains: "instr(%s, %s) > 0"}
