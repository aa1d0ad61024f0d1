package storetest

import (
	"bytes"
	"context"
	"testing"

	"github.com/polyloop/polyloop"
)

// LegacyRun is the run written by LegacyLog and the number of its records.
const (
	LegacyRun     = "legacy"
	legacyRecords = 6
)

// LegacyLog is the log a store of the schema before checksums holds: the
// records of LegacyRun, their stored bytes (as the Runner hands them to a
// store in one Append), and the run's summary.
func LegacyLog(t testing.TB) ([]polyloop.Record, [][]byte, polyloop.RunSummary) {
	t.Helper()
	recs := Prefix(LegacyRun, legacyRecords)
	rows := RowsOf(t, LegacyRun, recs)
	data := make([][]byte, len(rows))
	for i, r := range rows {
		data[i] = r.Data
	}
	sum := polyloop.RunSummary{RunID: LegacyRun}
	for _, r := range recs {
		sum.Apply(r)
	}
	return recs, data, sum
}

// RowsOf are the rows the Runner hands a store for an Append of recs.
func RowsOf(t testing.TB, runID string, recs []polyloop.Record) []polyloop.Row {
	t.Helper()
	var c capture
	if err := polyloop.AppendRecords(context.Background(), &c, runID, recs...); err != nil {
		t.Fatal(err)
	}
	return c.rows
}

// capture is a store that keeps the rows of its Appends, whatever they are.
type capture struct{ rows []polyloop.Row }

func (c *capture) Append(_ context.Context, _ string, rows []polyloop.Row) error {
	c.rows = append(c.rows, rows...)
	return nil
}

func (c *capture) ReadRows(context.Context, string) ([]polyloop.Row, error) { return c.rows, nil }

func (c *capture) ReadRowsFrom(_ context.Context, _ string, from int64, limit int) ([]polyloop.Row, error) {
	from = min(max(from, 0), int64(len(c.rows)))
	return c.rows[from:min(from+int64(limit), int64(len(c.rows)))], nil
}

// Unchecked is what a durable store tells of the records it keeps without a
// checksum.
type Unchecked interface {
	polyloop.Store
	RecordsWithoutChecksum(ctx context.Context, runID string) (int64, error)
}

// CheckLegacy checks a store that opened (and migrated) a database holding
// LegacyLog without checksums: the log reads as written, its records count
// as unchecked, records appended now get checksums, and a change to one of
// them is found while the same change to an old record is not (nothing can
// tell it).
func CheckLegacy(t *testing.T, s Unchecked, raw Tamper) {
	ctx := context.Background()
	recs, _, _ := LegacyLog(t)
	SameLog(t, ReadAll(t, ctx, s, LegacyRun), recs)
	more := Prefix(LegacyRun, legacyRecords+4)[legacyRecords:]
	mustAppend(t, ctx, s, LegacyRun, more...)
	if n, err := s.RecordsWithoutChecksum(ctx, LegacyRun); err != nil || n != legacyRecords {
		t.Fatalf("RecordsWithoutChecksum = %d, %v; want the %d legacy records", n, err, legacyRecords)
	}
	rows := raw.Rows(t, LegacyRun)
	for _, r := range rows {
		if r.Unchecked != (r.Seq < legacyRecords) {
			t.Fatalf("record %d: unchecked %v; want no checksum exactly for the legacy records", r.Seq, r.Unchecked)
		}
	}
	old, fresh := rows[1], rows[legacyRecords]
	old.Data = bytes.Replace(old.Data, []byte(`"m1.1"`), []byte(`"m1.2"`), 1)
	raw.Put(t, LegacyRun, old)
	if _, err := polyloop.ReadLog(ctx, s, LegacyRun); err != nil {
		t.Fatalf("an unchecked record changed within UTF-8: %v, want it read (unchecked)", err)
	}
	fresh.Data = bytes.Replace(fresh.Data, []byte(`"m`), []byte(`"M`), 1)
	raw.Put(t, LegacyRun, fresh)
	d := damaged{s: s, raw: raw, run: LegacyRun}
	_, err := polyloop.ReadLog(ctx, s, LegacyRun)
	d.checkCorrupt(t, err, legacyRecords, "checksum mismatch")
}
