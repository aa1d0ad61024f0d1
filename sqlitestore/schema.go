package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
)

// migrations[i] takes the schema from version i to version i+1. The version
// is kept in SQLite's user_version. Never edit a migration once released:
// add a new one. Released: 1 (the first cut). 2 onwards were ordered as
// they landed together, before any release, so their numbers never changed
// under a database in use.
var migrations = []string{
	// 1: records and run summaries.
	`CREATE TABLE records (
		run_id TEXT NOT NULL,
		seq    INTEGER NOT NULL,
		kind   TEXT NOT NULL,
		data   BLOB NOT NULL,
		PRIMARY KEY (run_id, seq)
	);
	CREATE TABLE runs (
		run_id        TEXT PRIMARY KEY,
		agent         TEXT NOT NULL DEFAULT '',
		snapshot_hash TEXT NOT NULL DEFAULT '',
		started_at    INTEGER,
		updated_at    INTEGER,
		records       INTEGER NOT NULL,
		finished      INTEGER NOT NULL DEFAULT 0,
		stop_reason   TEXT NOT NULL DEFAULT '',
		totals        TEXT,
		parent_run_id TEXT NOT NULL DEFAULT ''
	) WITHOUT ROWID;
	CREATE INDEX runs_by_start ON runs (started_at, run_id);
	CREATE INDEX runs_by_agent ON runs (agent, started_at);
	CREATE INDEX runs_by_parent ON runs (parent_run_id) WHERE parent_run_id <> '';`,
	// 2: crc, the CRC-32C of data (polyloop.Row.Checksum), checked on every
	// read. Rows written before have none (NULL) and are read unchecked.
	`ALTER TABLE records ADD COLUMN crc INTEGER;`,
	// 3: agent memory beside the run logs (memory.go). Every version
	// of every entry; the head of each entry (its last version, and
	// whether that is live); the committed write ids; view versions.
	`CREATE TABLE memory_versions (
		namespace TEXT NOT NULL,
		key       TEXT NOT NULL,
		version   INTEGER NOT NULL,
		deleted   INTEGER NOT NULL DEFAULT 0,
		value     BLOB,
		run_id    TEXT NOT NULL DEFAULT '',
		step      INTEGER NOT NULL DEFAULT 0,
		call_id   TEXT NOT NULL DEFAULT '',
		write_id  TEXT NOT NULL,
		PRIMARY KEY (namespace, key, version)
	) WITHOUT ROWID;
	CREATE TABLE memory_heads (
		namespace TEXT NOT NULL,
		key       TEXT NOT NULL,
		version   INTEGER NOT NULL,
		live      INTEGER NOT NULL,
		PRIMARY KEY (namespace, key)
	) WITHOUT ROWID;
	CREATE TABLE memory_writes (
		write_id TEXT PRIMARY KEY,
		digest   TEXT NOT NULL,
		entries  TEXT NOT NULL
	) WITHOUT ROWID;
	CREATE TABLE view_versions (
		view     TEXT NOT NULL,
		version  INTEGER NOT NULL,
		write_id TEXT NOT NULL UNIQUE,
		digest   TEXT NOT NULL,
		data     BLOB NOT NULL,
		PRIMARY KEY (view, version)
	) WITHOUT ROWID;`,
	// 4: the start of each run's task in its summary (RunSummary.Task),
	// taken from the run_started record of the runs already stored.
	`ALTER TABLE runs ADD COLUMN task TEXT NOT NULL DEFAULT '';
	UPDATE runs SET task = coalesce((SELECT substr(json_extract(CAST(data AS TEXT), '$.snapshot.task.input'), 1, 1000)
		FROM records WHERE records.run_id = runs.run_id AND records.seq = 0 AND records.kind = 'run_started'), '');`,
	// 5: the sweep ledger (ledger.go): sweeps' manifests, the entries
	// that tie runs to a sweep's coordinates, and the runs' scores.
	`CREATE TABLE sweeps (
		name       TEXT PRIMARY KEY,
		manifest   BLOB NOT NULL,
		updated_at INTEGER NOT NULL
	) WITHOUT ROWID;
	CREATE TABLE sweep_runs (
		run_id      TEXT PRIMARY KEY,
		sweep       TEXT NOT NULL,
		coord       TEXT NOT NULL,
		agent       TEXT NOT NULL,
		agent_hash  TEXT NOT NULL,
		task_id     TEXT NOT NULL,
		epoch       INTEGER NOT NULL,
		attempt     INTEGER NOT NULL,
		previous    TEXT NOT NULL,
		task        BLOB NOT NULL,
		task_digest TEXT NOT NULL
	) WITHOUT ROWID;
	CREATE INDEX sweep_runs_by_coord ON sweep_runs (sweep, coord, attempt);
	CREATE INDEX sweep_runs_by_sweep ON sweep_runs (sweep, run_id);
	CREATE TABLE scores (
		run_id        TEXT NOT NULL,
		scorer        TEXT NOT NULL,
		version       TEXT NOT NULL,
		description   TEXT NOT NULL,
		value         REAL NOT NULL,
		explanation   TEXT NOT NULL,
		grader_run_id TEXT NOT NULL,
		target_digest TEXT NOT NULL,
		scored_at     INTEGER NOT NULL,
		PRIMARY KEY (run_id, scorer)
	) WITHOUT ROWID;`,
	// 6: at, each record's time (Unix nanoseconds; NULL in rows written
	// before), so that a run's next seq and last time come from the tail
	// of its log and its runs row is written only when something else of
	// its summary changes (summary.go).
	`ALTER TABLE records ADD COLUMN at INTEGER;`,
	// 7: error, a scorer's failure to score a run (ledger.Score.Error), so
	// that what could not be scored can say why; '' for a score.
	`ALTER TABLE scores ADD COLUMN error TEXT NOT NULL DEFAULT '';`,
	// 8: configuration snapshots kept once (polyloop.SnapshotKeeper,
	// design record 0045): the run_started row of a run written since
	// names in snap the ref of its snapshot, the SHA-256 of data (NULL on
	// every other row).
	`CREATE TABLE snapshots (
		ref  TEXT PRIMARY KEY,
		data BLOB NOT NULL
	) WITHOUT ROWID;
	ALTER TABLE records ADD COLUMN snap TEXT;`,
	// 9: nothing in the runs changes. Leases moved into one file
	// (design record 0052), whose run locks binaries before it do not
	// see: the version keeps them from opening the file, so that they
	// cannot take a run a newer binary holds.
	`CREATE TABLE IF NOT EXISTS store_meta (
		key   TEXT PRIMARY KEY,
		value TEXT NOT NULL
	) WITHOUT ROWID;
	INSERT OR REPLACE INTO store_meta (key, value) VALUES ('leases', 'one lease file, PATH.leases/.runs (design record 0052)');`,
}

// SchemaVersion is the schema version this package writes: the number of
// migrations.
const SchemaVersion = 9

// migrate brings the schema up to SchemaVersion in one write transaction,
// so that two processes opening a new file at once do not both migrate.
func migrate(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return interpretError("begin migration", err)
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return interpretError("read schema version", err)
	}
	if v > SchemaVersion {
		return fmt.Errorf("%w: the file has schema version %d, this package knows up to %d; upgrade polyloop to open it", ErrSchemaTooNew, v, SchemaVersion)
	}
	if v == SchemaVersion {
		return nil
	}
	for i := v; i < SchemaVersion; i++ {
		if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
			return interpretError(fmt.Sprintf("migrate schema to version %d", i+1), err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion)); err != nil {
		return interpretError("write schema version", err)
	}
	return interpretError("commit migration", tx.Commit())
}
