package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// SchemaVersion is the schema version this package writes: the number of
// migrations.
const SchemaVersion = 10

// migrations[i] takes the schema from version i to version i+1. "{s}" stands
// for the quoted schema name. Never edit a released migration: add one.
// Released: 1 and 2 (the first cut). 3 onwards were ordered as they landed
// together, before any release.
var migrations = []string{
	// 1: records and run summaries. Times are Unix nanoseconds, as the
	// records carry them (timestamptz would cut them to microseconds).
	`CREATE TABLE {s}.records (
		run_id text NOT NULL,
		seq    bigint NOT NULL,
		kind   text NOT NULL,
		data   bytea NOT NULL,
		PRIMARY KEY (run_id, seq)
	);
	CREATE TABLE {s}.runs (
		run_id        text PRIMARY KEY,
		agent         text NOT NULL DEFAULT '',
		snapshot_hash text NOT NULL DEFAULT '',
		started_at    bigint,
		updated_at    bigint,
		records       bigint NOT NULL,
		finished      boolean NOT NULL DEFAULT false,
		stop_reason   text NOT NULL DEFAULT '',
		totals        jsonb,
		parent_run_id text NOT NULL DEFAULT ''
	);
	CREATE INDEX runs_by_start ON {s}.runs (started_at, run_id);
	CREATE INDEX runs_by_agent ON {s}.runs (agent, started_at);
	CREATE INDEX runs_by_parent ON {s}.runs (parent_run_id) WHERE parent_run_id <> '';`,
	// 2: ListRuns orders by (started_at NULLS FIRST, run_id COLLATE "C"),
	// as sqlitestore does; the index follows, so that a limited listing
	// reads the index in order instead of sorting every run.
	`DROP INDEX {s}.runs_by_start;
	CREATE INDEX runs_by_start ON {s}.runs (started_at NULLS FIRST, run_id COLLATE "C");`,
	// 3: run leases (lease.go). The advisory lock is the lease; a row names
	// its holder and the generation whose lock is the live one.
	`CREATE TABLE {s}.leases (
		run_id   text PRIMARY KEY,
		gen      bigint NOT NULL,
		host     text NOT NULL,
		pid      integer NOT NULL,
		token    text NOT NULL,
		since    bigint NOT NULL,
		released boolean NOT NULL
	);`,
	// 4: crc, the CRC-32C of data (polyloop.Row.Checksum), checked on every
	// read. Rows written before have none (NULL) and are read unchecked.
	`ALTER TABLE {s}.records ADD COLUMN crc bigint;`,
	// 5: agent memory beside the run logs (memory.go). Every
	// version of every entry; the head of each entry (its last version,
	// and whether that is live), which a commit locks; the committed write
	// ids; view versions.
	`CREATE TABLE {s}.memory_versions (
		namespace text NOT NULL,
		key       text NOT NULL,
		version   bigint NOT NULL,
		deleted   boolean NOT NULL DEFAULT false,
		value     bytea,
		run_id    text NOT NULL DEFAULT '',
		step      integer NOT NULL DEFAULT 0,
		call_id   text NOT NULL DEFAULT '',
		write_id  text NOT NULL,
		PRIMARY KEY (namespace, key, version)
	);
	CREATE TABLE {s}.memory_heads (
		namespace text NOT NULL,
		key       text NOT NULL,
		version   bigint NOT NULL,
		live      boolean NOT NULL,
		PRIMARY KEY (namespace, key)
	);
	CREATE TABLE {s}.memory_writes (
		write_id text PRIMARY KEY,
		digest   text NOT NULL,
		entries  bytea NOT NULL
	);
	CREATE TABLE {s}.view_versions (
		view     text NOT NULL,
		version  bigint NOT NULL,
		write_id text NOT NULL UNIQUE,
		digest   text NOT NULL,
		data     bytea NOT NULL,
		PRIMARY KEY (view, version)
	);`,
	// 6: the start of each run's task in its summary (RunSummary.Task),
	// taken from the run_started record of the runs already stored.
	`ALTER TABLE {s}.runs ADD COLUMN task text NOT NULL DEFAULT '';
	UPDATE {s}.runs AS r SET task = coalesce(substr(convert_from(rec.data, 'UTF8')::jsonb #>> '{snapshot,task,input}', 1, 1000), '')
		FROM {s}.records AS rec WHERE rec.run_id = r.run_id AND rec.seq = 0 AND rec.kind = 'run_started';`,
	// 7: the sweep ledger (ledger.go): sweeps' manifests, the entries
	// that tie runs to a sweep's coordinates, and the runs' scores.
	`CREATE TABLE {s}.sweeps (
		name       text PRIMARY KEY,
		manifest   bytea NOT NULL,
		updated_at bigint NOT NULL
	);
	CREATE TABLE {s}.sweep_runs (
		run_id      text PRIMARY KEY,
		sweep       text NOT NULL,
		coord       text NOT NULL,
		agent       text NOT NULL,
		agent_hash  text NOT NULL,
		task_id     text NOT NULL,
		epoch       integer NOT NULL,
		attempt     integer NOT NULL,
		previous    text NOT NULL,
		task        bytea NOT NULL,
		task_digest text NOT NULL
	);
	CREATE INDEX sweep_runs_by_coord ON {s}.sweep_runs (sweep, coord, attempt);
	CREATE INDEX sweep_runs_by_sweep ON {s}.sweep_runs (sweep, run_id COLLATE "C");
	CREATE TABLE {s}.scores (
		run_id        text NOT NULL,
		scorer        text NOT NULL,
		version       text NOT NULL,
		description   text NOT NULL,
		value         double precision NOT NULL,
		explanation   text NOT NULL,
		grader_run_id text NOT NULL,
		target_digest text NOT NULL,
		scored_at     bigint NOT NULL,
		PRIMARY KEY (run_id, scorer)
	);`,
	// 8: room on the runs table's pages, so that the update of a summary
	// whose indexed columns keep their values (every Append of a run but
	// its first) can stay on its page without new index entries (a
	// heap-only tuple). Pages written before get the room when rewritten.
	`ALTER TABLE {s}.runs SET (fillfactor = 50);`,
	// 9: error, a scorer's failure to score a run (ledger.Score.Error), so
	// that what could not be scored can say why; '' for a score.
	`ALTER TABLE {s}.scores ADD COLUMN error text NOT NULL DEFAULT '';`,
	// 10: configuration snapshots kept once (polyloop.SnapshotKeeper,
	// design record 0045): the run_started row of a run written since
	// names in snap the ref of its snapshot, the SHA-256 of data (NULL on
	// every other row).
	`CREATE TABLE {s}.snapshots (
		ref  text PRIMARY KEY,
		data bytea NOT NULL
	);
	ALTER TABLE {s}.records ADD COLUMN snap text;`,
}

// migrate creates the schema and brings it to SchemaVersion in one
// transaction under an advisory lock, so concurrent Opens do not race.
func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return interpretError(ctx, "begin migration", err)
	}
	defer tx.Rollback(ctx)
	quoted := pgx.Identifier{s.schema}.Sanitize()
	steps := []string{
		`SELECT pg_advisory_xact_lock(hashtext('polyloop.pgstore:' || $1))`,
		`CREATE SCHEMA IF NOT EXISTS ` + quoted,
		`CREATE TABLE IF NOT EXISTS ` + quoted + `.schema_version (
			one boolean PRIMARY KEY DEFAULT true CHECK (one),
			version integer NOT NULL)`,
	}
	if _, err := tx.Exec(ctx, steps[0], s.schema); err != nil {
		return interpretError(ctx, "lock for migration", err)
	}
	for _, q := range steps[1:] {
		if _, err := tx.Exec(ctx, q); err != nil {
			return interpretError(ctx, "create schema", err)
		}
	}
	v, err := readVersion(ctx, tx, quoted)
	if err != nil {
		return err
	}
	if v > SchemaVersion {
		return fmt.Errorf("%w: schema %s has version %d, this package knows up to %d; upgrade polyloop to use it", ErrSchemaTooNew, s.schema, v, SchemaVersion)
	}
	if v == SchemaVersion {
		return nil
	}
	for i := v; i < SchemaVersion; i++ {
		if _, err := tx.Exec(ctx, strings.ReplaceAll(migrations[i], "{s}", quoted)); err != nil {
			return interpretError(ctx, fmt.Sprintf("migrate schema %s to version %d", s.schema, i+1), err)
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO `+quoted+`.schema_version (version) VALUES ($1)
		ON CONFLICT (one) DO UPDATE SET version = EXCLUDED.version`, SchemaVersion); err != nil {
		return interpretError(ctx, "write schema version", err)
	}
	return interpretError(ctx, "commit migration", tx.Commit(ctx))
}

// checkReadOnly is a read-only Open's check of the schema: it reads the
// version, writing nothing, and refuses a schema it cannot read as it is.
func (s *Store) checkReadOnly(ctx context.Context) error {
	quoted := pgx.Identifier{s.schema}.Sanitize()
	var v int
	err := s.pool.QueryRow(ctx, `SELECT version FROM `+quoted+`.schema_version`).Scan(&v)
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && (pe.Code == undefinedTable || pe.Code == invalidSchemaName):
		return fmt.Errorf("%w (%w): schema %s; a command that writes (polyloop run) creates them, as a role that may", ErrNeedsMigration, ErrNoSchema, s.schema)
	case errors.Is(err, pgx.ErrNoRows):
		v = 0
	case err != nil:
		return interpretError(ctx, "read schema version", err)
	}
	switch {
	case v > SchemaVersion:
		return fmt.Errorf("%w: schema %s has version %d, this package knows up to %d; upgrade polyloop to use it", ErrSchemaTooNew, s.schema, v, SchemaVersion)
	case v < SchemaVersion:
		return fmt.Errorf("%w: schema %s has version %d, this version of polyloop reads %d; a command that writes (polyloop run, resume) migrates it, as a role that may alter its tables", ErrNeedsMigration, s.schema, v, SchemaVersion)
	}
	return nil
}

// SQLSTATEs of a read-only Open's check: the table or the schema is
// missing.
const (
	undefinedTable    = "42P01"
	invalidSchemaName = "3F000"
)

func readVersion(ctx context.Context, tx pgx.Tx, quoted string) (int, error) {
	var v int
	err := tx.QueryRow(ctx, `SELECT version FROM `+quoted+`.schema_version`).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, interpretError(ctx, "read schema version", err)
	}
	return v, nil
}
