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

// Each kind of divergence, made by changing one record of the reference
// run: DiffRuns names it, at its step, with both sides.
func TestDiffRunsNamesEachKind(t *testing.T) {
	ref := referenceLog(t)
	mutate := func(f func(polyloop.RecordBody) polyloop.RecordBody) polyloop.RunLog {
		out := polyloop.RunLog{Records: append([]polyloop.Record(nil), ref.Records...)}
		for i, r := range out.Records {
			if b := f(r.Body); b != nil {
				out.Records[i].Body = b
			}
		}
		return out
	}
	for _, tc := range []struct {
		what string
		step int
		log  polyloop.RunLog
	}{
		{"reply", 2, mutate(func(b polyloop.RecordBody) polyloop.RecordBody {
			if r, ok := b.(*polyloop.ModelCallResult); ok && r.Step == 2 {
				c, reply := *r, *r.Reply
				reply.Text = "INVALID: something else"
				c.Reply = &reply
				return &c
			}
			return nil
		})},
		{"decision", 2, mutate(func(b polyloop.RecordBody) polyloop.RecordBody {
			if s, ok := b.(*polyloop.StepCompleted); ok && s.Step == 2 {
				c := *s
				c.Feedback = "other feedback"
				return &c
			}
			return nil
		})},
		{"action", 5, mutate(func(b polyloop.RecordBody) polyloop.RecordBody {
			if a, ok := b.(*polyloop.ActionIntent); ok && a.Step == 5 {
				c := *a
				c.Action.Args = []byte(`{"text":"FIVE"}`)
				c.ToolCall = 0 // no longer the model's tool call
				return &c
			}
			return nil
		})},
		{"outcome", 6, mutate(func(b polyloop.RecordBody) polyloop.RecordBody {
			if r, ok := b.(*polyloop.ActionResult); ok && r.Step == 6 {
				c, o := *r, *r.Outcome
				o.Status, c.Synthetic = polyloop.NotExecuted, true // as the grammar wants of a not_executed outcome
				c.Outcome = &o
				return &c
			}
			return nil
		})},
		{"finish", 12, mutate(func(b polyloop.RecordBody) polyloop.RecordBody {
			if f, ok := b.(*polyloop.RunFinished); ok {
				c := *f
				c.FinalAnswer = "another answer"
				return &c
			}
			return nil
		})},
	} {
		d := polyloop.DiffRuns(ref, tc.log)
		if d.First == nil || d.First.What != tc.what || d.First.Step != tc.step || d.First.A == d.First.B {
			t.Errorf("%s: divergence %+v, want %s at step %d with two sides", tc.what, d.First, tc.what, tc.step)
		}
	}
}
