package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/polyloop/polyloop"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// Options configure a Store. The zero value (or a nil *Options) takes the
// defaults.
type Options struct {
	// BusyTimeout is how long a connection waits for another process's lock
	// before failing (default DefaultBusyTimeout).
	BusyTimeout time.Duration
	// MaxBatch bounds how many Appends one transaction gathers (default
	// DefaultMaxBatch).
	MaxBatch int
	// MaxReaders bounds the read connections (default DefaultMaxReaders).
	MaxReaders int
	// ReadOnly opens an existing file for reading only, as a user who may
	// not be able to write it or its directory: Open creates nothing,
	// migrates nothing and writes nothing, and every Append fails. A file
	// of an older schema fails Open with ErrNeedsMigration (see
	// readonly.go for how a file whose directory cannot be written is read).
	ReadOnly bool
}

// Defaults of Options.
const (
	DefaultBusyTimeout = 10 * time.Second
	DefaultMaxBatch    = 256
	DefaultMaxReaders  = 4
)

func (o *Options) withDefaults() Options {
	var v Options
	if o != nil {
		v = *o
	}
	if v.BusyTimeout <= 0 {
		v.BusyTimeout = DefaultBusyTimeout
	}
	if v.MaxBatch <= 0 {
		v.MaxBatch = DefaultMaxBatch
	}
	if v.MaxReaders <= 0 {
		v.MaxReaders = DefaultMaxReaders
	}
	return v
}

// Store is a polyloop.Store and polyloop.RunLister on one SQLite file. It is
// safe for concurrent use; Appends from concurrent runs share transactions
// (group commit). Several Stores, in one process or several, may open the
// same file: the sequence rule fences them.
type Store struct {
	opts Options
	path string
	// immutable is set on a read-only store read as an immutable file
	// (readonly.go).
	immutable bool
	write     *sql.DB // one connection, used by the leader (commit.go)
	read      *sql.DB
	stmts     writeStmts
	c         committer // hands the write connection to one leader at a time
	stats     counters
	cache     summaryCache // the leader's
	leases    leaseSet     // held leases (lease.go)
	lk        leaseLocks   // the lease file's locks (lease_linux.go)
	// leaseDir holds the lease file (Linux) and the per-run lock files of
	// the leases: the database's resolved path (absolute, symlinks
	// followed) with ".leases" added.
	leaseDir string
	// noShared: a read-only store of a file of schema 7, before the
	// snapshots table: its rows are all whole.
	noShared bool
	// afterInsert, when set (tests only, before the first Append), runs in
	// the leader after an Append's records are inserted and before its
	// summary is written, on the fast or the careful path; an error fails
	// that Append.
	afterInsert func(runID string, careful bool) error
}

var (
	_ polyloop.Store     = (*Store)(nil)
	_ polyloop.RunLister = (*Store)(nil)
)

// Open opens the database at path, creating the file (mode 0600: runs hold
// conversations) and the schema if needed and migrating an older schema
// forward; with Options.ReadOnly, it only reads. It fails with
// ErrSchemaTooNew when the file was written by a newer version of this
// package, and with ErrDamaged when SQLite finds the file damaged (see
// OpenSalvage).
func Open(path string, opts *Options) (*Store, error) {
	if path == "" || strings.ContainsAny(path, "?#") || strings.HasPrefix(path, "file:") || path == ":memory:" {
		return nil, fmt.Errorf("sqlitestore: invalid database path %q (a file path without '?' or '#')", path)
	}
	s := &Store{opts: opts.withDefaults(), path: path}
	var err error
	if s.opts.ReadOnly {
		err = s.openReadOnly()
	} else {
		err = s.openWrite()
	}
	if err != nil {
		return nil, err
	}
	if s.leaseDir, err = leaseDir(path); err != nil {
		s.write.Close()
		return nil, err
	}
	if s.read, err = sql.Open("sqlite", s.dsn("deferred")); err != nil {
		s.write.Close()
		return nil, fmt.Errorf("sqlitestore: open %s: %w", path, err)
	}
	s.read.SetMaxOpenConns(s.opts.MaxReaders)
	s.read.SetMaxIdleConns(s.opts.MaxReaders)
	if err := s.stmts.prepare(s.write, !s.noShared); err != nil {
		s.closeDBs()
		return nil, err
	}
	return s, nil
}

// openWrite opens the write connection, creating the file private to its
// owner when it does not exist (SQLite gives the write-ahead log and
// shared-memory files the mode of the database file), and migrates.
func (s *Store) openWrite() error {
	if err := createPrivate(s.path); err != nil {
		return err
	}
	var err error
	if s.write, err = sql.Open("sqlite", s.dsn("immediate")); err != nil {
		return fmt.Errorf("sqlitestore: open %s: %w", s.path, err)
	}
	s.write.SetMaxOpenConns(1)
	s.write.SetConnMaxIdleTime(0)
	s.write.SetConnMaxLifetime(0)
	if err := migrate(context.Background(), s.write); err != nil {
		s.write.Close()
		return markDamaged(s.path, err)
	}
	return nil
}

// createPrivate creates an empty file at path, mode 0600, unless one is
// there: an empty file is an empty SQLite database.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sqlitestore: create %s: %w", path, err)
	}
	return f.Close()
}

// leaseDir is the lease directory of the database at path, which exists:
// its absolute path with every symlink resolved, and ".leases", so that
// every spelling of one database file (a symlink to it, a relative path)
// reaches the same leases.
func leaseDir(path string) (string, error) {
	resolved, err := filepath.EvalSymlinks(path)
	if err == nil {
		resolved, err = filepath.Abs(resolved)
	}
	if err != nil {
		return "", fmt.Errorf("sqlitestore: resolving %s for its lease directory: %w", path, err)
	}
	return resolved + ".leases", nil
}

// dsn builds the connection string: WAL, synchronous=FULL (see the package
// doc for why), the busy timeout, and the transaction lock mode; for a
// read-only store, readOnlyDSN's.
func (s *Store) dsn(txlock string) string {
	if s.opts.ReadOnly {
		return s.readOnlyDSN()
	}
	q := url.Values{}
	q.Set("_txlock", txlock)
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", s.opts.BusyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	return s.path + "?" + q.Encode()
}

// Close waits for Appends already queued to finish, then closes the
// database. Later calls fail with ErrClosed. Close is idempotent.
func (s *Store) Close() error {
	if s.closeQueue() {
		return nil
	}
	return s.closeDBs()
}

func (s *Store) closeDBs() error {
	s.lk.close()
	s.stmts.close()
	werr := s.write.Close()
	var rerr error
	if s.read != nil {
		rerr = s.read.Close()
	}
	if werr != nil {
		return fmt.Errorf("sqlitestore: close: %w", werr)
	}
	if rerr != nil {
		return fmt.Errorf("sqlitestore: close: %w", rerr)
	}
	return nil
}

// Stats are counters since Open.
type Stats struct {
	// Appends counts Appends that returned nil.
	Appends int64
	// Commits counts committed write transactions: each is one sync of
	// the write-ahead log. Commits/Appends < 1 shows group commit at work.
	Commits int64
	// Conflicts counts Appends refused with polyloop.ErrSeqConflict.
	Conflicts int64
}

type counters struct{ appends, commits, conflicts atomic.Int64 }

// Stats returns the counters.
func (s *Store) Stats() Stats {
	return Stats{Appends: s.stats.appends.Load(), Commits: s.stats.commits.Load(), Conflicts: s.stats.conflicts.Load()}
}
