package sqlitestore

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/storetest"
	"github.com/polyloop/polyloop/sweep/ledger"
	"github.com/polyloop/polyloop/sweep/ledger/ledgertest"
)

func TestLedgerContract(t *testing.T) {
	t.Parallel()
	ledgertest.TestLedger(t, func(t *testing.T) ledgertest.Store {
		s, err := Open(filepath.Join(t.TempDir(), "runs.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// Ledger writes share the writer's transactions with the runs' Appends:
// they are not counted as Appends, and what was committed is read back by
// another Store on the same file.
func TestLedgerSharesTheWriter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "runs.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := polyloop.AppendRecords(ctx, s, "r1", storetest.Started("r1", "a")); err != nil {
		t.Fatal(err)
	}
	e := ledger.Entry{RunID: "r1", Sweep: "s", Coord: "c", Agent: "a", AgentHash: "h", TaskID: "t", Epoch: 1, Attempt: 1,
		Task: json.RawMessage(`{}`), TaskDigest: "d"}
	if err := s.AddEntries(ctx, []ledger.Entry{e}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSweep(ctx, ledger.Sweep{Name: "s", Manifest: json.RawMessage(`{}`), UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if got := s.Stats().Appends; got != 1 {
		t.Errorf("Appends = %d after one Append and two ledger writes, want 1", got)
	}
	other, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	got, err := other.Coords(ctx, "s", []string{"c"})
	if err != nil || len(got) != 1 || got[0].Run == nil || got[0].Run.Agent != "a" {
		t.Errorf("another Store reads %+v (%v), want the entry with its run", got, err)
	}
}
