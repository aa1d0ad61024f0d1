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

// Whether openStore may create a SQLite store that does not exist yet: run
// does; the other commands, which read runs or continue one, refuse a
// missing store rather than leave an empty database behind (a mistyped
// --store).
const (
	createStore   = true
	existingStore = false
)

// openStore opens the store a --store value names: sqlite:PATH (with
// create, the file and its directory are created when missing) or a
// postgres:// (postgresql://) DSN.
func openStore(ctx context.Context, spec string, create bool) (store, error) {
	switch {
	case strings.HasPrefix(spec, "sqlite:"):
		path := strings.TrimPrefix(spec, "sqlite:")
		if path == "" {
			return nil, fmt.Errorf("--store sqlite: needs a path, e.g. sqlite:./.polyloop/polyloop.db")
		}
		if !create {
			if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("no store at %s (runs are written there by polyloop run)", path)
			}
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("store directory: %w", err)
		}
		return sqlitestore.Open(path, nil)
	case strings.HasPrefix(spec, "postgres://"), strings.HasPrefix(spec, "postgresql://"):
		return pgstore.Open(ctx, spec, nil)
	}
	return nil, fmt.Errorf("--store %q: expected sqlite:PATH or a postgres:// DSN", redactDSN(spec))
}

// redactDSN hides a password in a store spec before it is printed.
func redactDSN(spec string) string {
	at := strings.LastIndex(spec, "@")
	scheme := strings.Index(spec, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return spec
	}
	cred := spec[scheme+3 : at]
	if i := strings.Index(cred, ":"); i >= 0 {
		return spec[:scheme+3] + cred[:i] + ":***" + spec[at:]
	}
	return spec
}
