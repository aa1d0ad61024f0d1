package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// A read-only Store reads the file through SQLite's read-only mode, and
// writes nothing: no migration, no journal mode, no Append. A WAL database
// is read with the -shm file beside it, which SQLite creates when the
// first connection opens and removes when the last one closes. When no
// writer has the file open and its directory cannot be written (another
// user's store), that file cannot be created: the database file then holds
// every record (a clean close folds the write-ahead log in), and it is
// read as immutable — without locks, a snapshot of the file as it was,
// which does not follow a run that is still being written. A file left
// with a write-ahead log by a writer that died cannot be read that way:
// Open says so.

// openReadOnly opens the connections read-only and checks the schema.
func (s *Store) openReadOnly() error {
	if _, err := os.Stat(s.path); err != nil {
		return fmt.Errorf("sqlitestore: %w", err)
	}
	v, err := s.openReadOnlyConn()
	if err != nil && cannotShare(err) && !walPending(s.path) {
		s.write.Close()
		s.immutable = true
		v, err = s.openReadOnlyConn()
	}
	if err == nil {
		err = checkReadOnlyVersion(v)
		s.noShared = v < firstSharedSchema
	}
	if err != nil {
		s.write.Close()
		if cannotShare(err) {
			return fmt.Errorf("sqlitestore: %s: its write-ahead log %s-wal holds records not yet folded into the file, and reading them needs %s-shm, which this user cannot create in that directory: read the store as a user who can write its directory, or while its writer runs (%w)", s.path, s.path, s.path, err)
		}
		return markDamaged(s.path, err)
	}
	return nil
}

// openReadOnlyConn opens the write connection (which, read-only, never
// writes) and reads the schema version through it.
func (s *Store) openReadOnlyConn() (int, error) {
	var err error
	if s.write, err = sql.Open("sqlite", s.readOnlyDSN()); err != nil {
		return 0, fmt.Errorf("sqlitestore: open %s: %w", s.path, err)
	}
	s.write.SetMaxOpenConns(1)
	var v int
	if err := s.write.QueryRowContext(context.Background(), "PRAGMA user_version").Scan(&v); err != nil {
		return 0, interpretError("read schema version", err)
	}
	return v, nil
}

// readOnlyDSN is the connection string of a read-only store.
func (s *Store) readOnlyDSN() string {
	q := url.Values{}
	q.Set("mode", "ro")
	if s.immutable {
		q.Set("immutable", "1")
	}
	q.Add("_pragma", "query_only(1)")
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", s.opts.BusyTimeout.Milliseconds()))
	return "file:" + (&url.URL{Path: s.path}).EscapedPath() + "?" + q.Encode()
}

// firstSharedSchema is the schema that added shared snapshots (8); a
// read-only store reads a file of the schema before it as it is, since
// that file holds whole rows only.
const firstSharedSchema = 8

// leaseFileSchema is the schema that moved the leases into one file (9,
// design record 0052); it changed nothing a read-only store reads, so the
// schema before it is read as it is.
const leaseFileSchema = 9

// checkReadOnlyVersion refuses a schema a read-only store cannot read.
func checkReadOnlyVersion(v int) error {
	switch {
	case v > SchemaVersion:
		return fmt.Errorf("%w: the file has schema version %d, this package knows up to %d; upgrade polyloop to open it", ErrSchemaTooNew, v, SchemaVersion)
	case v < SchemaVersion && v != firstSharedSchema-1 && v != leaseFileSchema-1:
		return fmt.Errorf("%w: the file has schema version %d, this version of polyloop reads %d; a command that writes (polyloop run, resume) migrates it, as a user who can write the file", ErrNeedsMigration, v, SchemaVersion)
	}
	return nil
}

// cannotShare reports that SQLite could not open the shared-memory file a
// WAL database is read with (read-only: its directory cannot be written).
func cannotShare(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	c := se.Code() & 0xff
	return c == sqlite3.SQLITE_READONLY || c == sqlite3.SQLITE_CANTOPEN
}

// walPending reports whether a non-empty write-ahead log is beside path.
func walPending(path string) bool {
	st, err := os.Stat(path + "-wal")
	return err == nil && st.Size() > 0
}
