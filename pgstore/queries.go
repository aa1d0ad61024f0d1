package pgstore

import (
	"github.com/jackc/pgx/v5"
	"github.com/polyloop/polyloop/internal/sqlrows"
)

// queries are the statements, with the schema's tables filled in.
type queries struct {
	summary, insert, upsert, read, readFrom, unchecked, list string
	// snapshots stores shared snapshots once.
	snapshots string
	// insertMany and upsertMany write the records and summaries of
	// several Appends, one array of values per column.
	insertMany, upsertMany string
}

func newQueries(schema string) queries {
	records := pgx.Identifier{schema, "records"}.Sanitize()
	runs := pgx.Identifier{schema, "runs"}.Sanitize()
	snapshots := pgx.Identifier{schema, "snapshots"}.Sanitize()
	return queries{
		snapshots: `INSERT INTO ` + snapshots + ` (ref, data) SELECT * FROM unnest($1::text[], $2::bytea[]) ON CONFLICT (ref) DO NOTHING`,
		summary:   `SELECT ` + sqlrows.SummaryColumns + ` FROM ` + runs + ` WHERE run_id = $1`,
		insert: `INSERT INTO ` + records + ` (run_id, seq, kind, data, crc, snap)
			SELECT $1, s, k, d, c, r FROM unnest($2::bigint[], $3::text[], $4::bytea[], $5::bigint[], $6::text[]) AS t(s, k, d, c, r)`,
		upsert: `INSERT INTO ` + runs + ` (` + sqlrows.SummaryColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
			ON CONFLICT (run_id) DO UPDATE SET agent = EXCLUDED.agent, snapshot_hash = EXCLUDED.snapshot_hash,
			started_at = EXCLUDED.started_at, updated_at = EXCLUDED.updated_at, records = EXCLUDED.records,
			finished = EXCLUDED.finished, stop_reason = EXCLUDED.stop_reason, totals = EXCLUDED.totals,
			parent_run_id = EXCLUDED.parent_run_id, task = EXCLUDED.task`,
		insertMany: `INSERT INTO ` + records + ` (run_id, seq, kind, data, crc, snap)
			SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bytea[], $5::bigint[], $6::text[])`,
		upsertMany: `INSERT INTO ` + runs + ` (` + sqlrows.SummaryColumns + `)
			SELECT i, a, h, s, u, n, f, r, t::jsonb, p, k FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[],
				$6::bigint[], $7::boolean[], $8::text[], $9::text[], $10::text[], $11::text[]) AS v(i, a, h, s, u, n, f, r, t, p, k)
			ON CONFLICT (run_id) DO UPDATE SET agent = EXCLUDED.agent, snapshot_hash = EXCLUDED.snapshot_hash,
			started_at = EXCLUDED.started_at, updated_at = EXCLUDED.updated_at, records = EXCLUDED.records,
			finished = EXCLUDED.finished, stop_reason = EXCLUDED.stop_reason, totals = EXCLUDED.totals,
			parent_run_id = EXCLUDED.parent_run_id, task = EXCLUDED.task`,
		read: `SELECT r.seq, r.kind, r.data, r.crc, r.snap, s.data FROM ` + records + ` r LEFT JOIN ` + snapshots + ` s ON s.ref = r.snap
			WHERE r.run_id = $1 ORDER BY r.seq`,
		readFrom: `SELECT r.seq, r.kind, r.data, r.crc, r.snap, s.data FROM ` + records + ` r LEFT JOIN ` + snapshots + ` s ON s.ref = r.snap
			WHERE r.run_id = $1 AND r.seq >= $2 ORDER BY r.seq LIMIT $3`,
		unchecked: `SELECT count(*) FROM ` + records + ` WHERE run_id = $1 AND crc IS NULL`,
		list:      `SELECT ` + sqlrows.SummaryColumns + ` FROM ` + runs,
	}
}
