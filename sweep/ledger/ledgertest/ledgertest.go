// Package ledgertest is the contract kit of ledger.Ledger: a store that
// keeps sweeps runs TestLedger from its own test, as stores run
// polylooptest.TestStore. Each check gets a fresh store from the harness,
// runs under a watchdog, and names the contract rule it checks. Run it
// with -race.
package ledgertest

import (
	"context"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/sweep/ledger"
)

// Store is a run store that keeps sweeps: the ledger's runs are the
// store's, so that the ledger can join their summaries.
type Store interface {
	polyloop.Store
	ledger.Ledger
}

// NewStore returns a fresh, empty store for one check; it registers its
// own cleanup with t.
type NewStore func(t *testing.T) Store

// watchdog bounds every check, so that a store that hangs fails instead of
// hanging the test binary.
const watchdog = 2 * time.Minute

type check struct {
	name string
	fn   func(t *testing.T, ctx context.Context, s Store)
}

var checks = []check{
	{"SweepRoundTrip", testSweepRoundTrip},
	{"SweepsNewestFirstWithCounts", testSweeps},
	{"AddEntriesIdempotent", testAddIdempotent},
	{"AddEntriesConflictWritesNothing", testAddConflict},
	{"CoordsOrderAndStates", testCoords},
	{"RunsByID", testRuns},
	{"PageThroughASweep", testPage},
	{"ScoresReplaceByRunAndScorer", testScores},
	{"NothingGivenNothingDone", testEmpty},
	{"DoneContextRefused", testCancelled},
	{"LargeBatches", testLarge},
	{"ConcurrentAddsOfOneEntry", testConcurrentAdds},
}

// TestLedger runs every check of the Ledger contract against stores made
// by newStore.
func TestLedger(t *testing.T, newStore NewStore) {
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t)
			ctx, cancel := context.WithTimeout(context.Background(), watchdog)
			defer cancel()
			done := make(chan struct{})
			go func() {
				defer close(done)
				c.fn(t, ctx, s)
			}()
			select {
			case <-done:
			case <-ctx.Done():
				t.Fatalf("%s did not finish within %s: the store hangs", c.name, watchdog)
			}
		})
	}
}
