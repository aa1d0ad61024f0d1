// Package ledgertest is the contract kit of ledger.Ledger: a store that
// keeps sweeps runs TestLedger from its own test, as stores run
// polylooptest.TestStore. Each check gets a fresh store from the harness,
// runs under a watchdog, and names the contract rule it checks; the kit's
// own tests feed it broken ledgers to show that each check catches what it
// names. Run it with -race.
package ledgertest

import (
	"context"
	"fmt"
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

// Watchdog bounds every check, so that a store that hangs fails instead of
// hanging the test binary.
const Watchdog = 2 * time.Minute

// check is one check of the contract: it returns nil when the store keeps
// the rule, or what it found.
type check struct {
	name string
	fn   func(ctx context.Context, s Store) error
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
			if err := run(c, newStore(t)); err != nil {
				t.Error(err)
			}
		})
	}
}

// run runs one check under the watchdog.
func run(c check, s Store) error {
	ctx, cancel := context.WithTimeout(context.Background(), Watchdog)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.fn(ctx, s) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("%s did not finish within %s: the store hangs", c.name, Watchdog)
	}
}
