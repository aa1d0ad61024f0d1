package pgstore

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/polyloop/polyloop"
)

// summaryColumns are the columns of the runs table, in the order scanSummary
// reads them and summaryArgs gives them.
const summaryColumns = `run_id, agent, snapshot_hash, started_at, updated_at, records, finished, stop_reason, totals, parent_run_id`

// queries are the statements, with the schema's tables filled in.
type queries struct {
	summary, insert, upsert, read, list string
}

func newQueries(schema string) queries {
	records := pgx.Identifier{schema, "records"}.Sanitize()
	runs := pgx.Identifier{schema, "runs"}.Sanitize()
	return queries{
		summary: `SELECT ` + summaryColumns + ` FROM ` + runs + ` WHERE run_id = $1`,
		insert: `INSERT INTO ` + records + ` (run_id, seq, kind, data)
			SELECT $1, s, k, d FROM unnest($2::bigint[], $3::text[], $4::bytea[]) AS t(s, k, d)`,
		upsert: `INSERT INTO ` + runs + ` (` + summaryColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
			ON CONFLICT (run_id) DO UPDATE SET agent = EXCLUDED.agent, snapshot_hash = EXCLUDED.snapshot_hash,
			started_at = EXCLUDED.started_at, updated_at = EXCLUDED.updated_at, records = EXCLUDED.records,
			finished = EXCLUDED.finished, stop_reason = EXCLUDED.stop_reason, totals = EXCLUDED.totals,
			parent_run_id = EXCLUDED.parent_run_id`,
		read: `SELECT seq, data FROM ` + records + ` WHERE run_id = $1 ORDER BY seq`,
		list: `SELECT ` + summaryColumns + ` FROM ` + runs,
	}
}

// scanSummary reads one runs row.
func scanSummary(row pgx.Row) (polyloop.RunSummary, error) {
	var s polyloop.RunSummary
	var started, updated *int64
	var totals []byte
	var stop string
	if err := row.Scan(&s.RunID, &s.Agent, &s.SnapshotHash, &started, &updated, &s.Records, &s.Finished, &stop, &totals, &s.ParentRunID); err != nil {
		return s, err
	}
	s.StartedAt, s.UpdatedAt = fromNanos(started), fromNanos(updated)
	s.StopReason = polyloop.StopReason(stop)
	if totals != nil {
		s.Totals = new(polyloop.Totals)
		if err := json.Unmarshal(totals, s.Totals); err != nil {
			return s, fmt.Errorf("pgstore: decoding totals of run %q: %w", s.RunID, err)
		}
	}
	return s, nil
}

// summaryArgs are the arguments of the upsert, in summaryColumns order.
func summaryArgs(s polyloop.RunSummary) ([]any, error) {
	var totals []byte
	if s.Totals != nil {
		b, err := json.Marshal(s.Totals)
		if err != nil {
			return nil, err
		}
		totals = b
	}
	return []any{s.RunID, s.Agent, s.SnapshotHash, toNanos(s.StartedAt), toNanos(s.UpdatedAt),
		s.Records, s.Finished, string(s.StopReason), totals, s.ParentRunID}, nil
}

// Times are stored as Unix nanoseconds; the zero time as NULL.
func toNanos(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	n := t.UnixNano()
	return &n
}

func fromNanos(n *int64) time.Time {
	if n == nil {
		return time.Time{}
	}
	return time.Unix(0, *n).UTC()
}
