package sqlitestore

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/polyloop/polyloop"
)

// summaryColumns are the columns of the runs table, in the order scanSummary
// reads them.
const summaryColumns = `run_id, agent, snapshot_hash, started_at, updated_at, records, finished, stop_reason, totals, parent_run_id`

type scanner interface{ Scan(dest ...any) error }

// scanSummary reads one runs row.
func scanSummary(row scanner) (polyloop.RunSummary, error) {
	var s polyloop.RunSummary
	var started, updated sql.NullInt64
	var totals sql.NullString
	var stop string
	if err := row.Scan(&s.RunID, &s.Agent, &s.SnapshotHash, &started, &updated, &s.Records, &s.Finished, &stop, &totals, &s.ParentRunID); err != nil {
		return s, err
	}
	s.StartedAt, s.UpdatedAt = fromNanos(started), fromNanos(updated)
	s.StopReason = polyloop.StopReason(stop)
	if totals.Valid {
		s.Totals = new(polyloop.Totals)
		if err := json.Unmarshal([]byte(totals.String), s.Totals); err != nil {
			return s, fmt.Errorf("decoding totals of run %q: %w", s.RunID, err)
		}
	}
	return s, nil
}

// summaryArgs are the arguments of upsertSummary, in summaryColumns order.
func summaryArgs(s polyloop.RunSummary) ([]any, error) {
	var totals sql.NullString
	if s.Totals != nil {
		b, err := json.Marshal(s.Totals)
		if err != nil {
			return nil, err
		}
		totals = sql.NullString{String: string(b), Valid: true}
	}
	return []any{s.RunID, s.Agent, s.SnapshotHash, toNanos(s.StartedAt), toNanos(s.UpdatedAt),
		s.Records, s.Finished, string(s.StopReason), totals, s.ParentRunID}, nil
}

// Times are stored as Unix nanoseconds; the zero time as NULL.
func toNanos(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixNano(), Valid: true}
}

func fromNanos(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}
