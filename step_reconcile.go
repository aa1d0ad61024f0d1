package polyloop

import "fmt"

// toReconcile is the buffer of the intents a reconciler is asked about:
// every open never_replay action of the batch not yet answered for.
func (m *machine) toReconcile() []*ActionIntent {
	ask := m.intents[:0]
	for _, a := range m.st.batch {
		if a.askable() && m.reconciles(a.intent.Action) {
			ask = append(ask, a.intent)
		}
	}
	m.intents = ask
	return ask
}

// reconciled feeds a reconciler's answer about the open action whose latest
// intent is in: the answer is recorded (ActionReconciled), and a completed
// verdict's outcome settles the action as if it had been returned by
// Execute. A verdict outside the Reconciler contract is refused
// (ErrInvalidVerdict) and nothing is recorded.
func (m *machine) reconciled(in *ActionIntent, v Verdict) error {
	st := m.st
	i := in.Index
	if i >= len(st.batch) || st.batch[i].intent != in || !st.batch[i].askable() {
		return fmt.Errorf("polyloop: internal error: a verdict for action %s, which was not asked about", in.ActionID)
	}
	if err := v.check(); err != nil {
		return fmt.Errorf("action %s: %w", in.ActionID, err)
	}
	rec := &ActionReconciled{Step: st.step, ActionID: in.ActionID, Attempt: in.Attempt, Key: in.key(st.runID),
		Verdict: v.Kind, Said: truncateBytes(ValidText(v.Said), MaxAuditBytes), Resolution: v.Kind.resolution()}
	if v.Kind == VerdictCompleted {
		rec.Status = v.Outcome.Status
	}
	m.add(rec)
	if v.Kind == VerdictCompleted {
		m.settleOutcome(i, *v.Outcome, in.ActionID, in.Attempt, "")
	}
	return nil
}
