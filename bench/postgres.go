package bench

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// withPG runs fn on a short-lived connection to dsn.
func withPG(ctx context.Context, dsn string, fn func(*pgx.Conn) error) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("bench: connecting to PostgreSQL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return fn(conn)
}

// pgSchemaBytes is the size of a schema's tables with their indexes and
// TOAST.
func pgSchemaBytes(ctx context.Context, dsn, schema string) (int64, error) {
	var n int64
	err := withPG(ctx, dsn, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
			FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
			WHERE s.nspname = $1 AND c.relkind = 'r'`, schema).Scan(&n)
	})
	return n, err
}

// pgDropSchema drops a benchmark's schema and everything in it.
func pgDropSchema(ctx context.Context, dsn, schema string) error {
	if !strings.HasPrefix(schema, "polyloop_bench_") {
		return fmt.Errorf("bench: refusing to drop schema %q, not a benchmark schema", schema)
	}
	return withPG(ctx, dsn, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		return err
	})
}

// pgSettings describes the server: where it is (without the password),
// its version and the settings that bound a commit.
func pgSettings(ctx context.Context, dsn string) (string, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return "", fmt.Errorf("bench: parsing the DSN: %w", err)
	}
	names := []string{"server_version", "synchronous_commit", "fsync", "wal_sync_method", "commit_delay"}
	vals := make([]string, len(names))
	err = withPG(ctx, dsn, func(c *pgx.Conn) error {
		for i, n := range names {
			if err := c.QueryRow(ctx, "SHOW "+n).Scan(&vals[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("pgstore (pgx pool) on %s@%s:%d/%s: PostgreSQL %s, synchronous_commit=%s, fsync=%s, wal_sync_method=%s, commit_delay=%s",
		cfg.User, cfg.Host, cfg.Port, cfg.Database, vals[0], vals[1], vals[2], vals[3], vals[4]), nil
}
