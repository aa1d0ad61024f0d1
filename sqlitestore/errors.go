package sqlitestore

import (
	"errors"
	"fmt"

	"github.com/polyloop/polyloop"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

var (
	// ErrClosed is returned by the methods of a closed Store.
	ErrClosed = errors.New("sqlitestore: store is closed")
	// ErrSchemaTooNew is returned by Open for a database whose schema was
	// written by a newer version of this package.
	ErrSchemaTooNew = errors.New("sqlitestore: database schema is newer than this version of sqlitestore")
	// ErrNeedsMigration is returned by a read-only Open (Options.ReadOnly)
	// for a database whose schema is older than SchemaVersion: migrating it
	// writes, which a read-only open never does.
	ErrNeedsMigration = errors.New("sqlitestore: the database needs a schema migration, which a read-only open does not do")
	// ErrNotConsecutive is polyloop.ErrNotConsecutive, kept for callers that
	// name it here.
	ErrNotConsecutive = polyloop.ErrNotConsecutive
)

// interpretError is the one place where SQLite errors become the library's
// sentinels: a primary key violation on (run_id, seq) is a sequence
// conflict. Every other error is returned as is, wrapped with what was being
// done.
func interpretError(op string, err error) error {
	if err == nil {
		return nil
	}
	var se *sqlite.Error
	if errors.As(err, &se) && (se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE) {
		return fmt.Errorf("sqlitestore: %s: %w (%w)", op, polyloop.ErrSeqConflict, err)
	}
	return fmt.Errorf("sqlitestore: %s: %w", op, err)
}

// conflict reports that an Append did not start at the run's next seq.
func conflict(runID string, first, next int64) error {
	return fmt.Errorf("sqlitestore: run %q: Append starts at seq %d, next seq is %d: %w", runID, first, next, polyloop.ErrSeqConflict)
}

// damaged reports whether SQLite found the database file damaged: a
// malformed page (SQLITE_CORRUPT), a file that is not a database
// (SQLITE_NOTADB), or a read past the file's end (a truncated file).
func damaged(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return true
	}
	return se.Code() == sqlite3.SQLITE_IOERR_SHORT_READ
}
