package sweepqueue

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/polyloop/polyloop/internal/pgpool"
)

// DefaultSchema is the PostgreSQL schema of River's tables when
// Options.Schema is empty: apart from pgstore's (pgstore.DefaultSchema).
const DefaultSchema = "polyloop_river"

// Options configure Open. A nil *Options takes the defaults.
type Options struct {
	// Schema holds River's tables (default DefaultSchema). It is created
	// if missing.
	Schema string
	// MaxConns bounds the queue's pool (0: pgxpool's default).
	MaxConns int32
}

// Queue is a sweep queue on PostgreSQL: a pool and a River client that
// inserts jobs. It is safe for concurrent use.
type Queue struct {
	pool   *pgxpool.Pool
	schema string
	client *river.Client[pgx.Tx]
}

// Open connects to the database at dsn and brings River's tables in the
// queue's schema up to date (rivermigrate, under an advisory lock, so that
// workers starting together do not race). Open a
// pgstore.Store on the same database first to migrate the runs' tables:
// the CLI does both.
func Open(ctx context.Context, dsn string, opts *Options) (*Queue, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	pool, err := pgpool.Open(ctx, dsn, o.MaxConns)
	if err != nil {
		return nil, fmt.Errorf("sweepqueue: %w", err)
	}
	q := &Queue{pool: pool, schema: o.Schema}
	if err := q.migrate(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	q.client, err = river.NewClient(riverpgxv5.New(pool), &river.Config{Schema: q.schema})
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("sweepqueue: %w", err)
	}
	return q, nil
}

// migrate creates the schema and runs River's migrations up, under a
// session advisory lock so that workers starting together take turns.
// River's migrations cannot share one transaction (one adds an enum value
// that the next uses): rivermigrate runs each in its own.
func (q *Queue) migrate(ctx context.Context) error {
	conn, err := q.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("sweepqueue: connect for migration: %w", err)
	}
	defer conn.Release()
	const key = `hashtext('polyloop.sweepqueue:' || $1)`
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(`+key+`)`, q.schema); err != nil {
		return fmt.Errorf("sweepqueue: lock for migration: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(`+key+`)`, q.schema)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{q.schema}.Sanitize()); err != nil {
		return fmt.Errorf("sweepqueue: create schema %s: %w", q.schema, err)
	}
	m, err := rivermigrate.New(riverpgxv5.New(q.pool), &rivermigrate.Config{Schema: q.schema})
	if err != nil {
		return fmt.Errorf("sweepqueue: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("sweepqueue: migrate River's tables in %s: %w", q.schema, err)
	}
	return nil
}

// Schema is the schema of River's tables.
func (q *Queue) Schema() string { return q.schema }

// Close closes the pool. Stop the queue's Workers first.
func (q *Queue) Close() error {
	q.pool.Close()
	return nil
}

// OpenExisting connects to a queue that exists already, to read it
// (Status): it migrates nothing, and returns nil without an error when the
// database has no River tables in the schema. Such a Queue inserts no jobs
// and makes no workers.
func OpenExisting(ctx context.Context, dsn string, opts *Options) (*Queue, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("sweepqueue: connecting: %w", err)
	}
	var present bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, pgx.Identifier{o.Schema, "river_job"}.Sanitize()).Scan(&present); err != nil {
		pool.Close()
		return nil, fmt.Errorf("sweepqueue: looking for the queue: %w", err)
	}
	if !present {
		pool.Close()
		return nil, nil
	}
	return &Queue{pool: pool, schema: o.Schema}, nil
}
