package polylooptest

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/polyloop/polyloop"
)

// EquivalenceForm renders a run log for the equivalence property of resume
// (SPEC §7.2): a deterministic run stopped after any prefix of its records
// and resumed ends with the same records as the uninterrupted run, apart from
// timestamps and orphaned intents. The form drops orphaned intents (a model
// call or action intent superseded by a later attempt of the same execution)
// and the fields that legitimately differ after a resume: seq, at, call ids
// and attempts, and the totals' counts of executions of unknown outcome.
// It also drops what depends on the version of the format the records were
// written in, so that a log written before and resumed today compares with
// one written today: run_started's log_version, and whether an action
// intent copies the tool call it is (1.1) or refers to it (since 1.2): the
// form always shows the action, as polyloop.ReadLog resolves it (pass logs
// as ReadLog reads them).
// An orphaned model-call intent also makes the run's tokens and cost
// unknown (the provider may have billed it): in a log that has one, the form
// leaves out the totals' tokens_unknown and cost_unknown, and CheckEquivalent
// then leaves them out of both logs' forms.
//
// In a run whose snapshot lets a batch's actions run in parallel, the order
// in which their intents and outcomes were recorded depends on the order in
// which they happened to finish (and, after a crash, which of them were
// replayed); the form then lists each step's action intents sorted, then its
// settled outcomes sorted, then the step record without the outcome it
// carried.
func EquivalenceForm(log polyloop.RunLog) ([]string, error) {
	return equivalenceForm(log, hasModelOrphans(log))
}

func equivalenceForm(log polyloop.RunLog, dropUnknownFlags bool) ([]string, error) {
	parallel := false
	if rs := log.Started(); rs != nil {
		parallel = rs.Snapshot.ParallelActions
	}
	var out, intents, settled []string
	for i, r := range log.Records {
		if superseded(log.Records, i) {
			continue
		}
		m, err := formOf(r)
		if err != nil {
			return nil, err
		}
		if tot, ok := m["totals"].(map[string]any); ok && dropUnknownFlags {
			delete(tot, "tokens_unknown")
			delete(tot, "cost_unknown")
		}
		if parallel {
			if s, ok := settlementOf(m); ok {
				settled = append(settled, s)
			}
		}
		nb, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		switch {
		case !parallel:
			out = append(out, string(nb))
		case r.Kind() == polyloop.KindActionIntent:
			intents = append(intents, string(nb))
		case r.Kind() == polyloop.KindActionResult:
		case r.Kind() == polyloop.KindStepCompleted:
			slices.Sort(intents)
			slices.Sort(settled)
			out = append(append(append(out, intents...), settled...), string(nb))
			intents, settled = nil, nil
		default:
			out = append(out, string(nb))
		}
	}
	return append(append(out, intents...), settled...), nil
}

// hasModelOrphans reports whether the log has a model-call intent without
// its result.
func hasModelOrphans(log polyloop.RunLog) bool {
	intents, results := 0, 0
	for _, r := range log.Records {
		switch r.Body.(type) {
		case *polyloop.ModelCallIntent:
			intents++
		case *polyloop.ModelCallResult:
			results++
		}
	}
	return intents > results
}

// formOf is a record as a JSON object without the fields that differ after a
// resume.
func formOf(r polyloop.Record) (map[string]any, error) {
	if in, ok := r.Body.(*polyloop.ActionIntent); ok && in.ToolCall > 0 {
		c := *in
		c.ToolCall = 0 // the form shows the action, however the log kept it
		r.Body = &c
	}
	b, err := r.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("record %d: %w", r.Seq, err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("record %d: %w", r.Seq, err)
	}
	// The idempotency key is derived from the run id (a fork's differs) and
	// absent from logs before 1.3.
	for _, k := range []string{"seq", "at", "call_id", "attempt", "model_call_id", "log_version", "idempotency_key"} {
		delete(m, k)
	}
	if tot, ok := m["totals"].(map[string]any); ok {
		delete(tot, "unknown_model_calls")
		delete(tot, "unknown_actions")
	}
	return m, nil
}

// settlementOf takes the settled outcome out of an action_result or a step
// record that carries one, and renders it.
func settlementOf(m map[string]any) (string, bool) {
	if _, ok := m["result_id"]; !ok {
		return "", false
	}
	s := map[string]any{"kind": "settled"}
	for _, k := range []string{"result_id", "outcome", "observation", "synthetic", "truncated_chars", "audit"} {
		if v, ok := m[k]; ok {
			s[k] = v
			delete(m, k)
		}
	}
	b, _ := json.Marshal(s) // values decoded from JSON always encode
	return string(b), true
}

// CheckEquivalent returns nil when got and want are the same run under the
// equivalence property, and otherwise an error naming the first difference.
func CheckEquivalent(got, want polyloop.RunLog) error {
	drop := hasModelOrphans(got) || hasModelOrphans(want)
	g, err := equivalenceForm(got, drop)
	if err != nil {
		return err
	}
	w, err := equivalenceForm(want, drop)
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
				if n.ActionID == b.ActionID {
					return true
				}
			case *polyloop.StepCompleted, *polyloop.ModelCallIntent, *polyloop.RunFinished:
				return false
			}
		}
	}
	return false
}
