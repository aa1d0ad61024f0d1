// Package storetest holds what the durable stores' tests (sqlitestore,
// pgstore) share beyond the exported contract kit polylooptest.TestStore,
// which both run too: a few checks the kit lacks (Run), workload W's
// records and runner, helpers to compare logs and race two handles, and
// the stores' benchmarks.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// NewStore returns a fresh, empty store for one subtest. It registers its
// own cleanup with t.
type NewStore func(t *testing.T) polyloop.Store

// watchdog bounds every subtest, so that a store that hangs fails instead of
// hanging the test binary.
const watchdog = 2 * time.Minute

// Run runs the checks that polylooptest.TestStore lacks against stores
// made by newStore:
//   - RepeatedAppendConflicts: the very records of an earlier Append, sent
//     again, are a conflict (a store must not take a repeat as
//     idempotent).
//   - UnencodableRecordRefused: an Append holding a record without a body
//     fails (the kit only asks that it be all or nothing) and writes
//     nothing.
//   - ListRunsFilters: ListRuns filtered by agent among several, by
//     snapshot hash (a ConfigOverride's included), by a time range and by
//     several conditions at once.
//   - LimitsRefused: the worst cases of outside data (see testLimits).
//   - OddTimesListed: ListRuns reports the fold of a log whose records have
//     the zero time or one beyond nanoseconds (see testOddTimes).
//
// The order of ListRuns is the kit's (polylooptest's ListRunsOrder check).
func Run(t *testing.T, newStore NewStore) {
	tests := []struct {
		name string
		fn   func(t *testing.T, ctx context.Context, s polyloop.Store)
	}{
		{"RepeatedAppendConflicts", testRepeatedAppend},
		{"UnencodableRecordRefused", testUnencodable},
		{"ListRunsFilters", testListRuns},
		{"LimitsRefused", testLimits},
		{"OddTimesListed", testOddTimes},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			ctx, cancel := context.WithTimeout(context.Background(), watchdog)
			defer cancel()
			done := make(chan struct{})
			go func() {
				defer close(done)
				tc.fn(t, ctx, s)
			}()
			select {
			case <-done:
			case <-time.After(watchdog + 10*time.Second):
				t.Fatalf("%s: store hung for more than %v", tc.name, watchdog)
			}
		})
	}
}

// Normalize returns the records as canonical JSON lines (sorted keys), so
// that two logs can be compared whatever the key order or number formatting
// a store gives back.
func Normalize(t testing.TB, records []polyloop.Record) []string {
	t.Helper()
	out := make([]string, len(records))
	for i, r := range records {
		raw, err := r.MarshalJSON()
		if err != nil {
			t.Fatalf("marshal record %d: %v", i, err)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("decode record %d: %v", i, err)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatalf("encode record %d: %v", i, err)
		}
		out[i] = buf.String()
	}
	return out
}

// ReadAll reads a run's log and fails the test on error.
func ReadAll(t testing.TB, ctx context.Context, s polyloop.Store, runID string) []polyloop.Record {
	t.Helper()
	l, err := polyloop.ReadLog(ctx, s, runID)
	if err != nil {
		t.Fatalf("ReadLog(%q): %v", runID, err)
	}
	return l.Records
}

// SameLog fails the test unless got equals want after normalisation.
func SameLog(t testing.TB, got, want []polyloop.Record) {
	t.Helper()
	g, w := Normalize(t, got), Normalize(t, want)
	if len(g) != len(w) {
		t.Fatalf("log has %d records, want %d", len(g), len(w))
	}
	for i := range g {
		if g[i] != w[i] {
			t.Fatalf("record %d differs:\n got  %.300s\n want %.300s", i, g[i], w[i])
		}
	}
}

func mustAppend(t testing.TB, ctx context.Context, s polyloop.Store, runID string, recs ...polyloop.Record) {
	t.Helper()
	if err := polyloop.AppendRecords(ctx, s, runID, recs...); err != nil {
		t.Fatalf("Append(%q, seq %d..): %v", runID, recs[0].Seq, err)
	}
}

// Prefix returns a log of n records (n ≥ 1): RunStarted, then workload W
// steps, cut at n.
func Prefix(runID string, n int) []polyloop.Record {
	recs := []polyloop.Record{Started(runID, "prefix"), Intent(1, 1)}
	for step := 1; len(recs) < n; step++ {
		b, a := StepBatches(step, int64(len(recs)))
		recs = append(append(recs, b...), a...)
	}
	return recs[:n]
}

func runName(t *testing.T, suffix string) string {
	return fmt.Sprintf("%s/%s/%d", t.Name(), suffix, time.Now().UnixNano())
}
