package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/dsn"
	"github.com/polyloop/polyloop/pgstore"
	"github.com/polyloop/polyloop/sqlitestore"
)

const defaultStore = "sqlite:./.polyloop/polyloop.db"

// store is an open run store: a polyloop.Store that lists its runs.
type store interface {
	polyloop.Store
	polyloop.RunLister
	Close() error
}

// How openStore opens a store.
type storeMode int

const (
	// createStore: run does; a SQLite file and its directory are created
	// when missing (the directory 0700, the file 0600).
	createStore storeMode = iota
	// existingStore: the commands that continue a run or write beside
	// runs refuse a missing store rather than leave an empty database
	// behind (a mistyped --store).
	existingStore
	// readOnlyStore: the commands that only read runs open an existing
	// SQLite store read-only, so that a user who may read it but not write
	// it can, and a PostgreSQL store without writing (a role that may only
	// SELECT will do); they never migrate either.
	readOnlyStore
)

// openStore opens the store a --store value names: sqlite:PATH or a
// postgres:// (postgresql://) DSN.
func openStore(ctx context.Context, spec string, mode storeMode) (store, error) {
	switch {
	case strings.HasPrefix(spec, "sqlite:"):
		path := strings.TrimPrefix(spec, "sqlite:")
		if path == "" {
			return nil, fmt.Errorf("--store sqlite: needs a path, e.g. sqlite:./.polyloop/polyloop.db")
		}
		if mode != createStore {
			if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
				return nil, &missingStoreError{path: path}
			}
		}
		if mode == readOnlyStore {
			return openReadOnlySQLite(path)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("store directory: %w", err)
		}
		return sqlitestore.Open(path, nil)
	case strings.HasPrefix(spec, "postgres://"), strings.HasPrefix(spec, "postgresql://"):
		if mode == readOnlyStore {
			return openReadOnlyPostgres(ctx, spec)
		}
		return pgstore.Open(ctx, spec, nil)
	}
	return nil, fmt.Errorf("--store %q: expected sqlite:PATH or a postgres:// DSN", dsn.Redact(spec))
}

// openReadOnlySQLite opens a SQLite store for a command that only reads;
// a store that needs a migration is refused with what to do.
func openReadOnlySQLite(path string) (store, error) {
	st, err := sqlitestore.Open(path, &sqlitestore.Options{ReadOnly: true})
	if errors.Is(err, sqlitestore.ErrNeedsMigration) {
		return nil, fmt.Errorf("%s was written by an older polyloop and needs a migration, which a command that only reads does not do: run polyloop resume or run on it once, as a user who can write it (%w)", path, err)
	}
	return st, err
}

// openReadOnlyPostgres opens a PostgreSQL store for a command that only
// reads: it writes nothing (a role that may only SELECT will do); a
// database where nothing was ever stored holds no runs (as a SQLite store
// not created yet), and a schema that needs a migration is refused with
// what to do.
func openReadOnlyPostgres(ctx context.Context, spec string) (store, error) {
	st, err := pgstore.Open(ctx, spec, &pgstore.Options{ReadOnly: true})
	if errors.Is(err, pgstore.ErrNoSchema) {
		return &absentStore{path: "the polyloop schema of " + dsn.Redact(spec)}, nil
	}
	if errors.Is(err, pgstore.ErrNeedsMigration) {
		return nil, fmt.Errorf("the store %s needs a schema migration, which a command that only reads does not do: run polyloop run or resume on it once, as a role that may create and alter its tables (%w)", dsn.Redact(spec), err)
	}
	return st, err
}

// missingStoreError is a SQLite store that does not exist, opened to read.
type missingStoreError struct{ path string }

func (e *missingStoreError) Error() string {
	return fmt.Sprintf("no store at %s (runs are written there by polyloop run)", e.path)
}

// openRead opens the store for a command that reads runs (readOnlyStore)
// or continues one (existingStore). A SQLite store that does not exist yet
// is an empty one when --store was not given on the command line — a fresh
// directory simply has no runs — and is not created; given explicitly, a
// missing store is an error, so that a mistyped path does not read as "no
// runs".
func (a *app) openRead(ctx context.Context, mode storeMode) (store, error) {
	st, err := openStore(ctx, a.store, mode)
	var missing *missingStoreError
	if errors.As(err, &missing) && !a.storeGiven {
		return &absentStore{path: missing.path}, nil
	}
	return st, err
}

// absentStore is the default store before the first run: it holds no runs.
type absentStore struct{ path string }

func (s *absentStore) Append(context.Context, string, []polyloop.Row) error {
	return fmt.Errorf("no store at %s: a read-only command does not create one", s.path)
}

func (s *absentStore) ReadRows(context.Context, string) ([]polyloop.Row, error) {
	return nil, nil
}

func (s *absentStore) ReadRowsFrom(context.Context, string, int64, int) ([]polyloop.Row, error) {
	return nil, nil
}

func (s *absentStore) ListRuns(context.Context, polyloop.RunFilter) ([]polyloop.RunSummary, error) {
	return nil, nil
}

func (s *absentStore) Close() error { return nil }

// notFound is the error for a run the store does not hold; it says when the
// store itself does not exist yet.
func notFound(st store, id string) error {
	if s, ok := st.(*absentStore); ok {
		return fmt.Errorf("%w: %q (no runs are stored yet: %s does not exist)", polyloop.ErrRunNotFound, id, s.path)
	}
	return fmt.Errorf("%w: %q", polyloop.ErrRunNotFound, id)
}

// readRun reads a run's log, with its RunID set; a run the store does not
// hold is notFound's error.
func readRun(ctx context.Context, st store, id string) (polyloop.RunLog, error) {
	log, err := polyloop.ReadLog(ctx, st, id)
	if err != nil {
		return polyloop.RunLog{}, err
	}
	if log.Empty() {
		return polyloop.RunLog{}, notFound(st, id)
	}
	log.RunID = id
	return log, nil
}

// noRuns says that a listing found no runs, and where it looked.
func noRuns(st store) string {
	if s, ok := st.(*absentStore); ok {
		return fmt.Sprintf("no runs yet: %s does not exist (polyloop run AGENT.yaml TASK stores runs there)", s.path)
	}
	return "no runs match"
}

// allRunIDs lists the ids of every run in the store, oldest first.
func allRunIDs(ctx context.Context, st store) ([]string, error) {
	runs, err := st.ListRuns(ctx, polyloop.RunFilter{})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.RunID
	}
	return ids, nil
}
