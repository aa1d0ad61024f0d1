package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The kinds of store.
const (
	kindMemory   = "memory"
	kindSQLite   = "sqlite"
	kindPostgres = "postgres"
)

// place is where one run is kept: nowhere (memory), a fresh SQLite file in
// a temporary directory, or a fresh PostgreSQL schema.
type place struct {
	kind   string
	dir    string // sqlite: the directory of path
	path   string // sqlite
	dsn    string // postgres
	schema string // postgres
}

func newPlace(ctx context.Context, store string) (*place, error) {
	b := make([]byte, 6)
	rand.Read(b)
	id := hex.EncodeToString(b)
	switch {
	case store == kindMemory:
		return &place{kind: kindMemory}, nil
	case store == kindSQLite:
		dir, err := os.MkdirTemp("", "peers-")
		if err != nil {
			return nil, err
		}
		return &place{kind: kindSQLite, dir: dir, path: filepath.Join(dir, "w-"+id+".db")}, nil
	case strings.HasPrefix(store, "postgres://"), strings.HasPrefix(store, "postgresql://"):
		return &place{kind: kindPostgres, dsn: store, schema: "peers_" + id}, nil
	}
	return nil, fmt.Errorf("-store %q: want memory, sqlite or a postgres:// DSN", store)
}

// size is what the place holds: the SQLite files (the database, its WAL
// and shared memory, if left), or the tables of the schema with their
// indexes and TOAST.
func (p *place) size(ctx context.Context) (int64, error) {
	switch p.kind {
	case kindSQLite:
		var n int64
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if fi, err := os.Stat(p.path + suffix); err == nil {
				n += fi.Size()
			}
		}
		return n, nil
	case kindPostgres:
		var n int64
		err := p.withConn(ctx, func(c *pgx.Conn) error {
			return c.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
				JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind IN ('r', 'm')`, p.schema).Scan(&n)
		})
		return n, err
	}
	return 0, nil
}

// remove deletes the place.
func (p *place) remove(ctx context.Context) error {
	switch p.kind {
	case kindSQLite:
		return os.RemoveAll(p.dir)
	case kindPostgres:
		return p.withConn(ctx, func(c *pgx.Conn) error {
			_, err := c.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{p.schema}.Sanitize()+" CASCADE")
			return err
		})
	}
	return nil
}

func (p *place) withConn(ctx context.Context, f func(*pgx.Conn) error) error {
	c, err := pgx.Connect(ctx, p.dsn)
	if err != nil {
		return err
	}
	return errors.Join(f(c), c.Close(ctx))
}
