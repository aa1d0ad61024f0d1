// Package pgsnapshots is a polyloop.BlobStore in PostgreSQL: where
// environment snapshots live when the runs they belong to are resumed by
// River workers on several machines, all of which reach the database.
//
// Its tables are its own (created by Open, in Options.Schema), not the run
// store's: blobs are not the run log, and a deployment may keep them in
// another database than its runs. A blob's touched_at is the database's
// clock, one clock for every machine, which the grace period of Sweep reads.
// A blob is held in one bytea value: chunks of envsnap are at most 4 MiB.
package pgsnapshots

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/pgpool"
)

// Options configure Open.
type Options struct {
	// Schema holds the tables ("public" when empty); created if missing.
	Schema string
	// MaxConns bounds the pool (the DSN's pool_max_conns when zero).
	MaxConns int32
}

// Store is the PostgreSQL BlobStore.
type Store struct {
	pool   *pgxpool.Pool
	schema string
}

var _ polyloop.BlobStore = (*Store)(nil)

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Open connects and creates the tables if they do not exist.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	if opts.Schema == "" {
		opts.Schema = "public"
	}
	if !schemaName.MatchString(opts.Schema) {
		return nil, fmt.Errorf("pgsnapshots: schema %q is not a plain lower-case identifier", opts.Schema)
	}
	pool, err := pgpool.Open(ctx, dsn, opts.MaxConns)
	if err != nil {
		return nil, fmt.Errorf("pgsnapshots: %w", err)
	}
	s := &Store{pool: pool, schema: opts.Schema}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgsnapshots: create the tables: %w", err)
	}
	return s, nil
}

// Close closes the pool.
func (s *Store) Close() { s.pool.Close() }

var tablePrefix = regexp.MustCompile(`\bS\.`)

// q puts the store's schema where sql says S.
func (s *Store) q(sql string) string {
	return tablePrefix.ReplaceAllLiteralString(sql, `"`+s.schema+`".`)
}

func (s *Store) migrate(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, s.q(`
CREATE SCHEMA IF NOT EXISTS "`+s.schema+`";
CREATE TABLE IF NOT EXISTS S.polyloop_env_blobs (
	digest     text COLLATE "C" PRIMARY KEY,
	data       bytea NOT NULL,
	size       bigint NOT NULL,
	touched_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS S.polyloop_env_blob_refs (
	parent text COLLATE "C" NOT NULL REFERENCES S.polyloop_env_blobs (digest) ON DELETE CASCADE,
	pos    int NOT NULL,
	child  text COLLATE "C" NOT NULL,
	PRIMARY KEY (parent, pos)
);
CREATE INDEX IF NOT EXISTS polyloop_env_blob_refs_child ON S.polyloop_env_blob_refs (child);
CREATE TABLE IF NOT EXISTS S.polyloop_env_pins (
	holder text COLLATE "C" NOT NULL,
	digest text COLLATE "C" NOT NULL,
	PRIMARY KEY (holder, digest)
);`))
	return err
}

// Put stores the blobs in one transaction: all or none.
func (s *Store) Put(ctx context.Context, blobs ...polyloop.Blob) error {
	for _, b := range blobs {
		if err := b.Check(); err != nil {
			return err
		}
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		batch := &pgx.Batch{}
		for _, b := range blobs {
			batch.Queue(s.q(`INSERT INTO S.polyloop_env_blobs (digest, data, size) VALUES ($1, $2, $3)
				ON CONFLICT (digest) DO UPDATE SET touched_at = now()`), b.Digest, b.Data, len(b.Data))
			for i, r := range b.Refs {
				batch.Queue(s.q(`INSERT INTO S.polyloop_env_blob_refs (parent, pos, child) VALUES ($1, $2, $3)
					ON CONFLICT DO NOTHING`), b.Digest, i, r)
			}
		}
		return tx.SendBatch(ctx, batch).Close()
	})
}

// Get reads a blob and checks its digest.
func (s *Store) Get(ctx context.Context, digest string) ([]byte, error) {
	var data []byte
	err := s.pool.QueryRow(ctx, s.q(`SELECT data FROM S.polyloop_env_blobs WHERE digest = $1`), digest).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: %s", polyloop.ErrBlobNotFound, digest)
	}
	if err != nil {
		return nil, err
	}
	if got := polyloop.DigestOf(data); got != digest {
		return nil, fmt.Errorf("pgsnapshots: blob %s is damaged (its data has digest %s)", digest, got)
	}
	return data, nil
}

// Refs reads a blob's references, in the order given to Put.
func (s *Store) Refs(ctx context.Context, digest string) ([]string, error) {
	rows, err := s.pool.Query(ctx, s.q(`SELECT r.child FROM S.polyloop_env_blobs b
		LEFT JOIN S.polyloop_env_blob_refs r ON r.parent = b.digest WHERE b.digest = $1 ORDER BY r.pos`), digest)
	if err != nil {
		return nil, err
	}
	var refs []string
	found := false
	for rows.Next() {
		var child *string
		if err := rows.Scan(&child); err != nil {
			return nil, err
		}
		found = true
		if child != nil {
			refs = append(refs, *child)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("%w: %s", polyloop.ErrBlobNotFound, digest)
	}
	return refs, nil
}

// Keep touches the blobs held and returns the others, in order.
func (s *Store) Keep(ctx context.Context, digests []string) ([]string, error) {
	rows, err := s.pool.Query(ctx, s.q(`UPDATE S.polyloop_env_blobs SET touched_at = now() WHERE digest = ANY($1) RETURNING digest`), digests)
	if err != nil {
		return nil, err
	}
	held, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, d := range held {
		have[d] = true
	}
	var missing []string
	for _, d := range digests {
		if !have[d] {
			missing = append(missing, d)
		}
	}
	return missing, nil
}

// Pin makes digest a root of holder (and touches it).
func (s *Store) Pin(ctx context.Context, holder, digest string) error {
	tag, err := s.pool.Exec(ctx, s.q(`WITH b AS (UPDATE S.polyloop_env_blobs SET touched_at = now() WHERE digest = $2 RETURNING digest)
		INSERT INTO S.polyloop_env_pins (holder, digest) SELECT $1, digest FROM b ON CONFLICT DO NOTHING`), holder, digest)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		var one int
		err := s.pool.QueryRow(ctx, s.q(`SELECT 1 FROM S.polyloop_env_pins WHERE holder = $1 AND digest = $2`), holder, digest).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: pin %s", polyloop.ErrBlobNotFound, digest)
		}
		return err
	}
	return nil
}

// Unpin drops holder's pins.
func (s *Store) Unpin(ctx context.Context, holder string) error {
	_, err := s.pool.Exec(ctx, s.q(`DELETE FROM S.polyloop_env_pins WHERE holder = $1`), holder)
	return err
}

// Sweep removes, in one statement, every blob no pin reaches that was not
// touched within grace (the database's clock).
func (s *Store) Sweep(ctx context.Context, grace time.Duration) (polyloop.SweepResult, error) {
	var res polyloop.SweepResult
	err := s.pool.QueryRow(ctx, s.q(`
WITH RECURSIVE reach(d) AS (
	SELECT digest FROM S.polyloop_env_pins
	UNION
	SELECT r.child FROM S.polyloop_env_blob_refs r JOIN reach ON r.parent = reach.d
), gone AS (
	DELETE FROM S.polyloop_env_blobs b
	WHERE b.touched_at < now() - make_interval(secs => $1) AND NOT EXISTS (SELECT 1 FROM reach WHERE reach.d = b.digest)
	RETURNING size
)
SELECT count(*), coalesce(sum(size), 0) FROM gone`), grace.Seconds()).Scan(&res.Removed, &res.RemovedBytes)
	if err != nil {
		return res, err
	}
	err = s.pool.QueryRow(ctx, s.q(`SELECT count(*), coalesce(sum(size), 0) FROM S.polyloop_env_blobs`)).Scan(&res.Kept, &res.KeptBytes)
	return res, err
}
