// Package sqlrows holds the rows the SQL stores (sqlitestore, pgstore) keep,
// encoded and decoded in one place: a records row (seq, kind, data,
// checksum) to and from a polyloop.Row, as it is (the Runner checks and
// decodes it); a run summary to and from a runs row; a RunFilter as a
// WHERE clause. The
// stores' schemas have the same columns; only their placeholders and column
// types differ, and the values here suit both drivers (database/sql and
// pgx): times as Unix nanoseconds, NULL for the zero time; totals as JSON
// text, NULL for none; checksums as int64, NULL for none.
package sqlrows

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/polyloop/polyloop"
)

// SummaryColumns are the columns of the runs table, in the order
// ScanSummary reads them and SummaryArgs gives them.
const SummaryColumns = `run_id, agent, snapshot_hash, started_at, updated_at, records, finished, stop_reason, totals, parent_run_id, task`

// Row is one row of a result: *sql.Row, *sql.Rows, pgx.Row, pgx.Rows.
type Row interface{ Scan(dest ...any) error }

// RecordColumns are the columns of the records table ScanRecord reads.
const RecordColumns = `seq, kind, data, crc`

// ScanRecord reads a records row (RecordColumns) as it is: a NULL checksum
// (a row written before the store kept checksums) makes it Unchecked.
func ScanRecord(row Row) (polyloop.Row, error) {
	var r polyloop.Row
	var kind string
	var crc *int64
	if err := row.Scan(&r.Seq, &kind, &r.Data, &crc); err != nil {
		return r, err
	}
	setKindAndChecksum(&r, kind, crc)
	return r, nil
}

// ScanSharedRecord reads a records row as ScanRecord does, followed by
// the ref of the shared snapshot the row refers to and the snapshot's
// bytes (both NULL on a row that refers to none): a row that has them
// comes with its Shared snapshot (polyloop.SnapshotKeeper).
func ScanSharedRecord(row Row) (polyloop.Row, error) {
	var r polyloop.Row
	var kind string
	var crc *int64
	var ref *string
	var data []byte
	if err := row.Scan(&r.Seq, &kind, &r.Data, &crc, &ref, &data); err != nil {
		return r, err
	}
	setKindAndChecksum(&r, kind, crc)
	if ref != nil {
		r.Shared = &polyloop.SharedSnapshot{Ref: *ref, Data: data}
	}
	return r, nil
}

// CRC is a row's checksum as the crc column keeps it: an int64 (both
// drivers' integer), never negative.
func CRC(r polyloop.Row) int64 { return int64(r.Checksum) }

// ScanSummary reads a runs row. Scan's error is returned as is (so that
// errors.Is sees a driver's no-rows error).
func ScanSummary(row Row) (polyloop.RunSummary, error) {
	var s polyloop.RunSummary
	var started, updated *int64
	var totals *string
	var stop string
	if err := row.Scan(&s.RunID, &s.Agent, &s.SnapshotHash, &started, &updated, &s.Records, &s.Finished, &stop, &totals, &s.ParentRunID, &s.Task); err != nil {
		return s, err
	}
	s.StartedAt, s.UpdatedAt = fromNanos(started), fromNanos(updated)
	s.StopReason = polyloop.StopReason(stop)
	if totals != nil {
		s.Totals = new(polyloop.Totals)
		if err := json.Unmarshal([]byte(*totals), s.Totals); err != nil {
			return s, fmt.Errorf("decoding totals of run %q: %w", s.RunID, err)
		}
	}
	return s, nil
}

// SummaryArgs are the values of a summary's runs row, in SummaryColumns
// order.
func SummaryArgs(s polyloop.RunSummary) ([]any, error) {
	var totals *string
	if s.Totals != nil {
		b, err := json.Marshal(s.Totals)
		if err != nil {
			return nil, fmt.Errorf("encoding totals: %w", err)
		}
		t := string(b)
		totals = &t
	}
	return []any{s.RunID, s.Agent, s.SnapshotHash, ToNanos(s.StartedAt), ToNanos(s.UpdatedAt),
		s.Records, s.Finished, string(s.StopReason), totals, s.ParentRunID, s.Task}, nil
}

// ToNanos is t as nanoseconds since the Unix epoch, as the stores' time
// columns hold it: nil (NULL) for the zero time and for a time UnixNano
// cannot represent (before 1678 or after 2262).
func ToNanos(t time.Time) *int64 {
	if t.IsZero() || t.Before(minNanos) || t.After(maxNanos) {
		return nil
	}
	n := t.UnixNano()
	return &n
}

// The times ToNanos represents.
var (
	minNanos = time.Unix(0, math.MinInt64)
	maxNanos = time.Unix(0, math.MaxInt64)
)

func fromNanos(n *int64) time.Time {
	if n == nil {
		return time.Time{}
	}
	return time.Unix(0, *n).UTC()
}

// Dialect is what differs between the stores' SQL.
type Dialect struct {
	// Placeholder gives the placeholder of the i-th argument, counted from
	// 1 ("?" or "$i").
	Placeholder func(i int) string
	// Binary is the collation clause that compares text byte by byte
	// (`COLLATE BINARY`, `COLLATE "C"`).
	Binary string
	// Contains is the condition that a column holds a substring, with %s
	// for the column and the placeholder, in that order
	// (`instr(%s, %s) > 0`, `strpos(%s, %s) > 0`).
	Contains string
}

// OrderBy is the ORDER BY clause of a listing: (started_at, run_id), runs
// without a start time first, run ids compared byte by byte; reversed
// when the filter is Descending.
func (d Dialect) OrderBy(f polyloop.RunFilter) string {
	if f.Descending {
		return " ORDER BY started_at DESC NULLS LAST, run_id " + d.Binary + " DESC"
	}
	return " ORDER BY started_at NULLS FIRST, run_id " + d.Binary
}

// Query is one SQL query and its arguments.
type Query struct {
	SQL  string
	Args []any
}

// Listing is the queries that list the runs a filter selects, in order:
// selectFrom ("SELECT … FROM runs") with the filter's WHERE and ORDER BY
// clauses, the Limit left to the caller, who runs them one after another
// until it has Limit rows. It is one query, or two for a descending listing
// after a position with a start time: the runs started before it, then the
// runs without a start time (which come last); one query with an OR would
// keep the databases from seeking in their index.
func (d Dialect) Listing(selectFrom string, f polyloop.RunFilter) []Query {
	if !f.Descending || f.After == nil || f.After.StartedAt.IsZero() {
		where, args := d.Where(f)
		return []Query{{selectFrom + where + d.OrderBy(f), args}}
	}
	p := *f.After
	before := f
	before.After = nil
	where, args := d.where(before, func(arg func(any) string) string {
		return "(started_at, run_id " + d.Binary + ") < (" + arg(p.StartedAt.UnixNano()) + ", " + arg(p.RunID) + ")"
	})
	unstarted, uargs := d.where(before, func(func(any) string) string { return "started_at IS NULL" })
	return []Query{
		{selectFrom + where + d.OrderBy(f), args},
		{selectFrom + unstarted + " ORDER BY run_id " + d.Binary + " DESC", uargs},
	}
}

// Where turns a filter into a WHERE clause over the runs table (empty when
// the filter has no condition) and its arguments. The filter's Limit and
// order are left to the caller (OrderBy).
func (d Dialect) Where(f polyloop.RunFilter) (string, []any) {
	return d.where(f, nil)
}

// where is Where with one more condition, when extra is not nil.
func (d Dialect) where(f polyloop.RunFilter, extra func(arg func(any) string) string) (string, []any) {
	var conds []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return d.Placeholder(len(args))
	}
	add := func(cond string, v any) { conds = append(conds, cond+" "+arg(v)) }
	if f.Agent != "" {
		add("agent =", f.Agent)
	}
	if f.SnapshotHash != "" {
		add("snapshot_hash =", f.SnapshotHash)
	}
	if f.Finished != nil {
		add("finished =", *f.Finished)
	}
	if f.StopReason != "" {
		add("stop_reason =", string(f.StopReason))
	}
	if !f.StartedAfter.IsZero() {
		add("started_at >=", f.StartedAfter.UnixNano())
	}
	if !f.StartedBefore.IsZero() {
		add("started_at <", f.StartedBefore.UnixNano())
	}
	if f.ParentRunID != "" {
		add("parent_run_id =", f.ParentRunID)
	}
	if f.TaskContains != "" {
		conds = append(conds, fmt.Sprintf(d.Contains, "task", arg(f.TaskContains)))
	}
	if f.After != nil {
		conds = append(conds, d.after(f, arg))
	}
	if extra != nil {
		conds = append(conds, extra(arg))
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// after is the condition of a filter's After: the rows after the position
// in the order listed, a NULL started_at standing for the zero time, which
// comes first. The row-value comparisons let both databases seek in their
// (started_at, run_id) index.
func (d Dialect) after(f polyloop.RunFilter, arg func(any) string) string {
	p := *f.After
	id := "run_id " + d.Binary
	switch {
	case p.StartedAt.IsZero() && !f.Descending:
		return "((started_at IS NULL AND " + id + " > " + arg(p.RunID) + ") OR started_at IS NOT NULL)"
	case p.StartedAt.IsZero():
		return "(started_at IS NULL AND " + id + " < " + arg(p.RunID) + ")"
	case !f.Descending:
		return "(started_at, " + id + ") > (" + arg(p.StartedAt.UnixNano()) + ", " + arg(p.RunID) + ")"
	default:
		return "((started_at, " + id + ") < (" + arg(p.StartedAt.UnixNano()) + ", " + arg(p.RunID) + ") OR started_at IS NULL)"
	}
}

// setKindAndChecksum sets a scanned row's kind, and its checksum or, for a
// row written before checksums (NULL), Unchecked.
func setKindAndChecksum(r *polyloop.Row, kind string, crc *int64) {
	r.Kind = polyloop.RecordKind(kind)
	if crc == nil {
		r.Unchecked = true
	} else {
		r.Checksum = uint32(*crc)
	}
}
