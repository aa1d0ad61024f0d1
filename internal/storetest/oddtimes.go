package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// testOddTimes checks that ListRuns reports what RunSummary.Apply folds
// over the log when a record's time is the zero time or outside the range
// of nanoseconds since the epoch (1678–2262): UpdatedAt follows the last
// record's time back and forth between such times and ordinary ones. A
// store that keeps times as nanoseconds may hold an unrepresentable time as
// none, so for those ListRuns may report the zero time instead.
func testOddTimes(t *testing.T, ctx context.Context, s polyloop.Store) {
	lister, ok := s.(polyloop.RunLister)
	if !ok {
		t.Skip("store has no ListRuns")
	}
	const id = "odd-times"
	times := []time.Time{{}, At(2), {}, {}, time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), At(6), {}}
	var want polyloop.RunSummary
	appendOne := func(rec polyloop.Record) {
		t.Helper()
		if err := polyloop.AppendRecords(ctx, s, id, rec); err != nil {
			t.Fatalf("append %d: %v", rec.Seq, err)
		}
		want.Apply(rec)
		want.RunID = id
	}
	appendOne(Started(id, "odd"))
	for i, at := range times {
		rec := Intent(int64(i+1), i+1)
		rec.At = at
		appendOne(rec)
		got, err := lister.ListRuns(ctx, polyloop.RunFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			t.Fatalf("ListRuns: %d runs, want 1", len(got))
		}
		w := want
		if at.Year() == 3000 && got[0].UpdatedAt.IsZero() {
			w.UpdatedAt = time.Time{}
		}
		sameSummary(t, fmt.Sprintf("after record %d (at %v)", rec.Seq, at), got[0], w)
	}
}
