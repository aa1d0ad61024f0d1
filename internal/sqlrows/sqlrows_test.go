package sqlrows

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// argsRow is a row whose columns are the given values, scanned by
// assignment: it checks that SummaryArgs and ScanSummary agree on the
// columns' order and types.
type argsRow []any

func (r argsRow) Scan(dest ...any) error {
	if len(dest) != len(r) {
		return fmt.Errorf("%d destinations for %d columns", len(dest), len(r))
	}
	for i, d := range dest {
		dv := reflect.ValueOf(d).Elem()
		v := reflect.ValueOf(r[i])
		if !v.Type().AssignableTo(dv.Type()) {
			return fmt.Errorf("column %d: a %s into a %s", i, v.Type(), dv.Type())
		}
		dv.Set(v)
	}
	return nil
}

func TestSummaryRoundTrip(t *testing.T) {
	t.Parallel()
	start := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)
	sums := []polyloop.RunSummary{
		{RunID: "r", Records: 2},
		{RunID: "r", Agent: "a", SnapshotHash: "sha256:x", StartedAt: start, UpdatedAt: start.Add(time.Second), Records: 9,
			Finished: true, StopReason: polyloop.StopCompleted, Totals: &polyloop.Totals{Steps: 2, CostUSD: 0.5}, ParentRunID: "p"},
	}
	for _, want := range sums {
		args, err := SummaryArgs(want)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(strings.Split(SummaryColumns, ",")); n != len(args) {
			t.Fatalf("%d args for %d columns", len(args), n)
		}
		got, err := ScanSummary(argsRow(args))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round trip:\n got  %+v\n want %+v", got, want)
		}
	}
}

func TestScanSummaryErrors(t *testing.T) {
	t.Parallel()
	errRow := errors.New("no rows")
	if _, err := ScanSummary(failingRow{errRow}); err != errRow {
		t.Errorf("Scan's error: got %v, want it as is", err)
	}
	bad := "{"
	args, _ := SummaryArgs(polyloop.RunSummary{RunID: "r"})
	args[8] = &bad
	if _, err := ScanSummary(argsRow(args)); err == nil || !strings.Contains(err.Error(), `decoding totals of run "r"`) {
		t.Errorf("bad totals: %v", err)
	}
}

type failingRow struct{ err error }

func (r failingRow) Scan(...any) error { return r.err }

func TestWhere(t *testing.T) {
	t.Parallel()
	at := time.Unix(0, 42)
	yes := true
	dollar := func(i int) string { return fmt.Sprintf("$%d", i) }
	question := func(int) string { return "?" }
	tests := []struct {
		f     polyloop.RunFilter
		ph    func(int) string
		where string
		args  []any
	}{
		{polyloop.RunFilter{Limit: 5}, dollar, "", nil},
		{polyloop.RunFilter{Agent: "a"}, question, " WHERE agent = ?", []any{"a"}},
		{polyloop.RunFilter{Agent: "a", SnapshotHash: "h", Finished: &yes, StopReason: polyloop.StopCompleted,
			StartedAfter: at, StartedBefore: at.Add(1), ParentRunID: "p"}, dollar,
			" WHERE agent = $1 AND snapshot_hash = $2 AND finished = $3 AND stop_reason = $4 AND started_at >= $5 AND started_at < $6 AND parent_run_id = $7",
			[]any{"a", "h", true, "completed", int64(42), int64(43), "p"}},
		{polyloop.RunFilter{Agent: "a", After: &polyloop.RunPosition{StartedAt: at, RunID: "r"}}, dollar,
			" WHERE agent = $1 AND (started_at, run_id COLLATE \"C\") > ($2, $3)",
			[]any{"a", int64(42), "r"}},
		{polyloop.RunFilter{Descending: true, After: &polyloop.RunPosition{StartedAt: at, RunID: "r"}}, question,
			" WHERE ((started_at, run_id COLLATE \"C\") < (?, ?) OR started_at IS NULL)",
			[]any{int64(42), "r"}},
		{polyloop.RunFilter{After: &polyloop.RunPosition{RunID: "r"}}, question,
			" WHERE ((started_at IS NULL AND run_id COLLATE \"C\" > ?) OR started_at IS NOT NULL)", []any{"r"}},
		{polyloop.RunFilter{Descending: true, After: &polyloop.RunPosition{RunID: "r"}}, question,
			" WHERE (started_at IS NULL AND run_id COLLATE \"C\" < ?)", []any{"r"}},
	}
	for _, tt := range tests {
		where, args := Dialect{Placeholder: tt.ph, Binary: `COLLATE "C"`}.Where(tt.f)
		if where != tt.where || !reflect.DeepEqual(args, tt.args) {
			t.Errorf("Where(%+v) = %q %v, want %q %v", tt.f, where, args, tt.where, tt.args)
		}
	}
}

// TestListingSplitsTheDescendingTail: a descending listing after a
// position with a start time is two queries — the runs started before it,
// with a row-value comparison the index can seek on, then the runs without
// a start time — and every other listing is one.
func TestListingSplitsTheDescendingTail(t *testing.T) {
	t.Parallel()
	d := Dialect{Placeholder: func(int) string { return "?" }, Binary: "COLLATE BINARY"}
	at := time.Unix(0, 42)
	qs := d.Listing("SELECT * FROM runs", polyloop.RunFilter{Agent: "a", Descending: true, After: &polyloop.RunPosition{StartedAt: at, RunID: "r"}})
	want := []Query{
		{"SELECT * FROM runs WHERE agent = ? AND (started_at, run_id COLLATE BINARY) < (?, ?) ORDER BY started_at DESC NULLS LAST, run_id COLLATE BINARY DESC", []any{"a", int64(42), "r"}},
		{"SELECT * FROM runs WHERE agent = ? AND started_at IS NULL ORDER BY run_id COLLATE BINARY DESC", []any{"a"}},
	}
	if !reflect.DeepEqual(qs, want) {
		t.Errorf("Listing:\n got  %q\n want %q", qs, want)
	}
	for _, f := range []polyloop.RunFilter{{}, {Descending: true}, {After: &polyloop.RunPosition{StartedAt: at}}, {Descending: true, After: &polyloop.RunPosition{RunID: "r"}}} {
		if qs := d.Listing("SELECT * FROM runs", f); len(qs) != 1 {
			t.Errorf("Listing(%+v): %d queries", f, len(qs))
		}
	}
}
