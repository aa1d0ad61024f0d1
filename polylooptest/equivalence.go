package polylooptest

import (
	"encoding/json"
	"fmt"

	"github.com/polyloop/polyloop"
)

// EquivalenceForm renders a run log for the equivalence property of resume
// (SPEC §7.2): a deterministic run stopped after any prefix of its records
// and resumed ends with the same records as the uninterrupted run, apart from
// timestamps and orphaned intents. The form drops orphaned intents (a model
// call or action intent superseded by a later attempt of the same execution)
// and the fields that legitimately differ after a resume: seq, at, call ids
// and attempts, and the totals' counts of executions of unknown outcome.
func EquivalenceForm(log polyloop.RunLog) ([]string, error) {
	var out []string
	for i, r := range log.Records {
		if superseded(log.Records, i) {
			continue
		}
		b, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", r.Seq, err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("record %d: %w", r.Seq, err)
		}
		for _, k := range []string{"seq", "at", "call_id", "attempt", "model_call_id"} {
			delete(m, k)
		}
		if tot, ok := m["totals"].(map[string]any); ok {
			delete(tot, "unknown_model_calls")
			delete(tot, "unknown_actions")
		}
		nb, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		out = append(out, string(nb))
	}
	return out, nil
}

// CheckEquivalent returns nil when got and want are the same run under the
// equivalence property, and otherwise an error naming the first difference.
func CheckEquivalent(got, want polyloop.RunLog) error {
	g, err := EquivalenceForm(got)
	if err != nil {
		return err
	}
	w, err := EquivalenceForm(want)
	if err != nil {
		return err
	}
	for i := 0; i < len(g) && i < len(w); i++ {
		if g[i] != w[i] {
			return fmt.Errorf("record %d of the equivalence form differs:\n got:  %s\n want: %s", i, g[i], w[i])
		}
	}
	if len(g) != len(w) {
		return fmt.Errorf("%d records in the equivalence form, want %d", len(g), len(w))
	}
	return nil
}

// superseded reports whether record i is an intent followed, within the same
// execution, by a later attempt of it.
func superseded(recs []polyloop.Record, i int) bool {
	switch b := recs[i].Body.(type) {
	case *polyloop.ModelCallIntent:
		if i+1 < len(recs) {
			n, ok := recs[i+1].Body.(*polyloop.ModelCallIntent)
			return ok && n.Step == b.Step
		}
	case *polyloop.ActionIntent:
		for _, r := range recs[i+1:] {
			switch n := r.Body.(type) {
			case *polyloop.ActionIntent:
				return n.ActionID == b.ActionID
			case *polyloop.StepCompleted, *polyloop.ModelCallIntent, *polyloop.RunFinished:
				return false
			}
		}
	}
	return false
}
