package ledgertest

import (
	"context"
	"slices"
	"testing"

	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/sweep/ledger"
)

// broken is memstore's ledger with one rule broken.
type broken struct {
	*memstore.Store
	fault string
}

func (b *broken) AddEntries(ctx context.Context, es []ledger.Entry) error {
	switch b.fault {
	case "noConflictError": // a changed entry is dropped without an error
		for _, e := range es {
			_ = b.Store.AddEntries(ctx, []ledger.Entry{e})
		}
		return nil
	case "partial": // entries are written one by one, a conflict leaving the earlier ones
		for _, e := range es {
			if err := b.Store.AddEntries(ctx, []ledger.Entry{e}); err != nil {
				return err
			}
		}
		return nil
	case "ignoreCancel":
		return b.Store.AddEntries(context.WithoutCancel(ctx), es)
	}
	return b.Store.AddEntries(ctx, es)
}

func (b *broken) Coords(ctx context.Context, sweep string, coords []string) ([]ledger.State, error) {
	out, err := b.Store.Coords(ctx, sweep, coords)
	if b.fault == "unordered" {
		slices.Reverse(out)
	}
	if b.fault == "noRuns" {
		for i := range out {
			out[i].Run = nil
		}
	}
	return out, err
}

func (b *broken) PutScores(ctx context.Context, scores []ledger.Score) error {
	if b.fault == "keepFirst" { // a score already recorded is not replaced
		var fresh []ledger.Score
		for _, sc := range scores {
			st, err := b.Store.Runs(ctx, []string{sc.RunID})
			if err != nil {
				return err
			}
			if len(st) == 0 || !slices.ContainsFunc(st[0].Scores, func(o ledger.Score) bool { return o.Scorer == sc.Scorer }) {
				fresh = append(fresh, sc)
			}
		}
		scores = fresh
	}
	return b.Store.PutScores(ctx, scores)
}

func (b *broken) Sweeps(ctx context.Context) ([]ledger.Info, error) {
	out, err := b.Store.Sweeps(ctx)
	if b.fault == "oldestFirst" {
		slices.Reverse(out)
	}
	return out, err
}

func (b *broken) Page(ctx context.Context, sweep, after string, limit int) ([]ledger.State, error) {
	if b.fault == "pageIncludesAfter" && after != "" {
		out, err := b.Store.Page(ctx, sweep, "", 0)
		var keep []ledger.State
		for _, st := range out {
			if st.RunID >= after && len(keep) < limit {
				keep = append(keep, st)
			}
		}
		return keep, err
	}
	return b.Store.Page(ctx, sweep, after, limit)
}

// TestKitCatchesBrokenLedgers feeds the kit ledgers that each break one
// rule: the check named must fail on each.
func TestKitCatchesBrokenLedgers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ fault, check string }{
		{"noConflictError", "AddEntriesConflictWritesNothing"},
		{"partial", "AddEntriesConflictWritesNothing"},
		{"ignoreCancel", "DoneContextRefused"},
		{"unordered", "CoordsOrderAndStates"},
		{"noRuns", "CoordsOrderAndStates"},
		{"keepFirst", "ScoresReplaceByRunAndScorer"},
		{"oldestFirst", "SweepsNewestFirstWithCounts"},
		{"pageIncludesAfter", "PageThroughASweep"},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			c, ok := named(tc.check)
			if !ok {
				t.Fatalf("no check %s", tc.check)
			}
			if err := run(c, &broken{Store: memstore.New(), fault: tc.fault}); err == nil {
				t.Errorf("%s passed a ledger with fault %s", tc.check, tc.fault)
			} else {
				t.Logf("caught: %v", err)
			}
		})
	}
}

// TestKitPassesMemstore: the unbroken ledger passes every check, so the
// failures above are the faults'.
func TestKitPassesMemstore(t *testing.T) {
	t.Parallel()
	for _, c := range checks {
		if err := run(c, &broken{Store: memstore.New()}); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func named(name string) (check, bool) {
	for _, c := range checks {
		if c.name == name {
			return c, true
		}
	}
	return check{}, false
}
