package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/pgstore"
	"github.com/polyloop/polyloop/sqlitestore"
)

// The kinds of store a benchmark can measure.
const (
	kindMemory   = "memory"
	kindSQLite   = "sqlite"
	kindPostgres = "postgres"
)

// storeSpec is one entry of Options.Stores.
type storeSpec struct {
	kind string
	dsn  string // PostgreSQL only
}

func parseStore(s string) (storeSpec, error) {
	switch {
	case s == kindMemory || s == kindSQLite:
		return storeSpec{kind: s}, nil
	case strings.HasPrefix(s, "postgres://"), strings.HasPrefix(s, "postgresql://"):
		return storeSpec{kind: kindPostgres, dsn: s}, nil
	}
	return storeSpec{}, fmt.Errorf("bench: unknown store %q (want memory, sqlite or a postgres:// DSN)", s)
}

func (s storeSpec) durable() bool { return s.kind != kindMemory }

// newLoc names a fresh, empty store for one measurement: a new SQLite file in
// dir or a new PostgreSQL schema. maxConns bounds a PostgreSQL pool (0: the
// pool's default).
func (s storeSpec) newLoc(dir string, maxConns int32) storeLoc {
	id := strings.ToLower(polyloop.NewRunID())
	switch s.kind {
	case kindSQLite:
		return storeLoc{Kind: kindSQLite, Path: filepath.Join(dir, "w-"+id+".db")}
	case kindPostgres:
		return storeLoc{Kind: kindPostgres, DSN: s.dsn, Schema: "polyloop_bench_" + id, MaxConns: maxConns}
	}
	return storeLoc{Kind: kindMemory}
}

// storeLoc says where the store of one measurement lives. It crosses to child
// processes as JSON, so that a fresh process opens the same store.
type storeLoc struct {
	Kind     string `json:"kind"`
	Path     string `json:"path,omitempty"`
	DSN      string `json:"dsn,omitempty"`
	Schema   string `json:"schema,omitempty"`
	MaxConns int32  `json:"max_conns,omitempty"`
}

// openStore is an open store with what the benchmark reads from it. Runs
// are given Store itself, never the openStore: the wrapper would hide the
// optional interfaces the store implements (RecordKeeper, SnapshotKeeper),
// and the Runner would then encode for memstore, which it never does.
type openStore struct {
	polyloop.Store
	// commits counts committed write transactions; nil when the store does
	// not count them.
	commits func() int64
	close   func() error
}

// open opens the store at l, creating it if needed. A memory location gives
// a new, empty store each time.
func (l storeLoc) open(ctx context.Context) (*openStore, error) {
	switch l.Kind {
	case kindSQLite:
		st, err := sqlitestore.Open(l.Path, nil)
		if err != nil {
			return nil, err
		}
		return &openStore{Store: st, commits: func() int64 { return st.Stats().Commits }, close: st.Close}, nil
	case kindPostgres:
		st, err := pgstore.Open(ctx, l.DSN, &pgstore.Options{Schema: l.Schema, MaxConns: l.MaxConns})
		if err != nil {
			return nil, err
		}
		return &openStore{Store: st, commits: func() int64 { return st.Stats().Commits }, close: st.Close}, nil
	case kindMemory:
		return &openStore{Store: memstore.New(), close: func() error { return nil }}, nil
	}
	return nil, fmt.Errorf("bench: unknown store kind %q", l.Kind)
}

// diskBytes is the space the store takes: the SQLite file with its WAL
// (measure after Close, which checkpoints the WAL), or the total size of the
// schema's tables, indexes and TOAST in PostgreSQL. ok is false for memory.
func (l storeLoc) diskBytes(ctx context.Context) (n int64, ok bool, err error) {
	switch l.Kind {
	case kindSQLite:
		for _, p := range []string{l.Path, l.Path + "-wal"} {
			fi, err := os.Stat(p)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return 0, false, err
			}
			n += fi.Size()
		}
		return n, true, nil
	case kindPostgres:
		n, err := pgSchemaBytes(ctx, l.DSN, l.Schema)
		return n, err == nil, err
	}
	return 0, false, nil
}

// remove deletes the store: the SQLite file or the PostgreSQL schema.
func (l storeLoc) remove(ctx context.Context) error {
	switch l.Kind {
	case kindSQLite:
		var errs []error
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			if err := os.Remove(l.Path + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	case kindPostgres:
		return pgDropSchema(ctx, l.DSN, l.Schema)
	}
	return nil
}
