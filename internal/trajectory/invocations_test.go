package trajectory_test

import (
	"context"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/runfixture"
	"github.com/polyloop/polyloop/memstore"
)

// TestInvocationsOfMaintenance: a run whose steps are maintained — an
// operation, a proposal child received, a proposal that failed and was
// skipped, maintenance_done — written without interruption is one
// invocation.
func TestInvocationsOfMaintenance(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	runfixture.Remembering(t, st, runfixture.NewClock(runfixture.Base), runfixture.MemoryRun, "the goal")
	tr := load(t, st, runfixture.MemoryRun)
	log, err := polyloop.ReadLog(context.Background(), st, runfixture.MemoryRun)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, r := range log.Records {
		k := string(r.Kind())
		if c, ok := r.Body.(*polyloop.ChildReception); ok && c.Maintenance {
			k = "maintenance child_reception"
		}
		kinds[k]++
	}
	for _, k := range []string{"maintenance_op", "maintenance child_reception", "maintenance_done"} {
		if kinds[k] == 0 {
			t.Fatalf("the run has no %s: %v", k, kinds)
		}
	}
	if tr.Finished == nil || tr.Finished.StopReason != polyloop.StopCompleted {
		t.Fatalf("finish %+v", tr.Finished)
	}
	if len(tr.Invocations) != 1 {
		var ev []string
		for _, inv := range tr.Invocations[1:] {
			ev = append(ev, inv.Evidence)
		}
		t.Errorf("%d invocations, want 1: %q", len(tr.Invocations), ev)
	}
}
