package polyloop_test

import (
	"testing"

	"github.com/polyloop/polyloop"
)

// DiffRuns aligns two runs by step and names the first divergence.
func TestDiffRuns(t *testing.T) {
	ref := referenceLog(t)
	if d := polyloop.DiffRuns(ref, ref); d.First != nil || len(d.Snapshot) != 0 || d.StepsA != 12 {
		t.Fatalf("a run against itself: %+v", d)
	}
	// The same run with another executor text at step 5.
	other := polyloop.RunLog{Records: append([]polyloop.Record(nil), ref.Records...)}
	for i, r := range other.Records {
		if sc, ok := r.Body.(*polyloop.StepCompleted); ok && sc.Step == 5 {
			changed := *sc
			changed.Observation = "FIVE"
			other.Records[i].Body = &changed
		}
	}
	d := polyloop.DiffRuns(ref, other)
	if d.First == nil || d.First.Step != 5 || d.First.What != "observation" || d.First.A != "five" || d.First.B != "FIVE" {
		t.Fatalf("divergence %+v, want the observation of step 5", d.First)
	}
	// A shorter run: the length.
	short := polyloop.RunLog{Records: ref.Records[:12]} // through step 3's record
	if d := polyloop.DiffRuns(ref, short); d.First == nil || d.First.What != "length" || d.First.Step != 4 {
		t.Fatalf("divergence %+v, want the length at step 4", d.First)
	}
}
