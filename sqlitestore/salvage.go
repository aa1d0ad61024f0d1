package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"

	"github.com/polyloop/polyloop"
)

// ErrDamaged marks a database file that SQLite finds damaged: a malformed
// page, a file shorter than its header says (a truncated file), or a file
// that is not a database. Open fails with it; OpenSalvage reads what such
// a file still holds.
var ErrDamaged = errors.New("sqlitestore: the database file is damaged")

// Salvage reads a store file read-only, whatever state it is in, for
// checking a damaged one (polyloop verify). SQLite is told to accept a file
// shorter than its header says (PRAGMA writable_schema, on a connection that
// writes nothing); reading a run then stops at its first record on a page
// that is gone or malformed, with a *polyloop.CorruptLogError naming the
// run and that record's seq. Nothing is ever written: no migration, no
// Append.
type Salvage struct {
	db  *sql.DB
	crc string // the checksum column, or NULL in a file of schema 1
	// shared: the file has the snapshots table (schema 8).
	shared bool
}

// OpenSalvage opens the file at path for reading only. It fails when the
// file is of a newer schema than this package knows.
func OpenSalvage(path string) (*Salvage, error) {
	q := url.Values{}
	q.Set("mode", "ro")
	q.Add("_pragma", "query_only(1)")
	q.Add("_pragma", "writable_schema(1)")
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", DefaultBusyTimeout.Milliseconds()))
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		db.Close()
		return nil, markDamaged(path, interpretError("read schema version", err))
	}
	if v > SchemaVersion {
		db.Close()
		return nil, fmt.Errorf("%w: the file has schema version %d, this package knows up to %d", ErrSchemaTooNew, v, SchemaVersion)
	}
	s := &Salvage{db: db, crc: "crc", shared: v >= firstSharedSchema}
	if v < 2 {
		s.crc = "NULL"
	}
	return s, nil
}

// RunIDs returns the ids of the runs that have records, as far as the file
// can be read; with the ids found before the damage, the error says where
// reading stopped.
func (s *Salvage) RunIDs(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT run_id FROM records ORDER BY run_id`)
	if err != nil {
		return nil, interpretError("list the runs of the records table", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return ids, interpretError("list the runs of the records table", err)
		}
		ids = append(ids, id)
	}
	return ids, interpretError("list the runs of the records table", rows.Err())
}

// ReadRows reads the run's rows as Store.ReadRows does, up to the damage
// (polyloop.ReadLog reads it).
func (s *Salvage) ReadRows(ctx context.Context, runID string) ([]polyloop.Row, error) {
	return readRows(ctx, s.db, s.crc, s.shared, runID, 0, -1)
}

// RecordsWithoutChecksum is Store.RecordsWithoutChecksum.
func (s *Salvage) RecordsWithoutChecksum(ctx context.Context, runID string) (int64, error) {
	if s.crc == "NULL" {
		var n int64
		err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM records WHERE run_id = ?`, runID).Scan(&n)
		return n, readError(ctx, runID, 0, err)
	}
	return countUnchecked(ctx, s.db, runID)
}

// Close closes the file.
func (s *Salvage) Close() error { return s.db.Close() }

// markDamaged marks err with ErrDamaged when SQLite found the file damaged.
func markDamaged(path string, err error) error {
	if damaged(err) {
		return fmt.Errorf("%w (%s): %w", ErrDamaged, path, err)
	}
	return err
}
