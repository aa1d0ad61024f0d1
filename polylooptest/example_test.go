package polylooptest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/polylooptest"
)

// An adapter author's test: the store's own test file calls the kit with a
// factory that gives every subtest a fresh store. (Shown with memstore;
// a durable store adds Reopen, and NewFaulty if it has a failure hook.)
func ExampleTestStore() {
	conformance := func(t *testing.T) {
		polylooptest.TestStore(t, polylooptest.StoreHarness{
			New: func(t testing.TB) polyloop.Store { return memstore.New() },
			Skip: map[string]string{
				"Reopen": "memstore keeps nothing across a restart",
			},
			Timeout: 30 * time.Second,
		})
	}
	_ = conformance // func TestConformance(t *testing.T) { ... } in the adapter's package
}

// FaultyStore "crashes" a run's store after three records: the run stops
// there, and the records that were accepted stay readable for a resume.
func ExampleFaultyStore() {
	ctx := context.Background()
	inner := memstore.New()
	store := &polylooptest.FaultyStore{Store: inner, CrashAfter: 3}
	rec := func(seq int64) polyloop.Record {
		return polyloop.Record{Seq: seq, At: time.Unix(0, 0), Body: &polyloop.ModelCallIntent{Step: int(seq) + 1, CallID: "m", Attempt: 1}}
	}
	fmt.Println(polyloop.AppendRecords(ctx, store, "run-1", rec(0), rec(1)))
	fmt.Println(polyloop.AppendRecords(ctx, store, "run-1", rec(2)))
	err := polyloop.AppendRecords(ctx, store, "run-1", rec(3))
	fmt.Println(errors.Is(err, polylooptest.ErrCrashed), store.Crashed())
	log, _ := polyloop.ReadLog(ctx, inner, "run-1")
	fmt.Println(len(log.Records), "records survive")
	// Output:
	// <nil>
	// <nil>
	// true true
	// 3 records survive
}
