package bench

import (
	"context"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
)

// keeperProbe is memstore noting whether it was handed encoded rows.
type keeperProbe struct {
	*memstore.Store
	encoded int
}

func (p *keeperProbe) Append(ctx context.Context, runID string, rows []polyloop.Row) error {
	for _, r := range rows {
		if len(r.Data) != 0 {
			p.encoded++
		}
	}
	return p.Store.Append(ctx, runID, rows)
}

// TestTimedRunKeepsTheStoresInterfaces: the in-memory figure is of a run
// on memstore as a library user has it — records kept as values, nothing
// encoded (polyloop.RecordKeeper). Given the benchmark's wrapper instead,
// the Runner would not see the interface and would encode every record.
func TestTimedRunKeepsTheStoresInterfaces(t *testing.T) {
	ctx := context.Background()
	probe := &keeperProbe{Store: memstore.New()}
	var _ polyloop.RecordKeeper = probe
	st := &openStore{Store: probe, close: func() error { return nil }}
	if _, err := timedRun(ctx, st, Workload{Steps: 5}); err != nil {
		t.Fatal(err)
	}
	if probe.encoded != 0 {
		t.Fatalf("the runner encoded %d records for a RecordKeeper: it was given the benchmark's wrapper", probe.encoded)
	}
}
