package polyloop

// The fold of reconciliations (SPEC §14): an action_reconciled names an
// action of the open batch of unknown outcome, at its latest intent, asked
// once; what it resolved decides what may follow.

// checkReconciled applies the grammar to an action_reconciled: it answers
// for the latest intent of an open action of the batch, never_replay and
// not yet reconciled.
func (st *logState) checkReconciled(r Record, b *ActionReconciled) error {
	if st.phase != phaseActing || b.Step != st.step {
		return st.corrupt(r, "action_reconciled of step %d outside its open batch", b.Step)
	}
	for _, a := range st.batch {
		if a.intent == nil || a.intent.ActionID != b.ActionID {
			continue
		}
		switch {
		case !a.open():
			return st.corrupt(r, "action_reconciled %q of an action with an outcome", b.ActionID)
		case a.intent.Attempt != b.Attempt:
			return st.corrupt(r, "action_reconciled %q answers attempt %d, the latest intent is attempt %d", b.ActionID, b.Attempt, a.intent.Attempt)
		case a.reconciled != nil:
			return st.corrupt(r, "action_reconciled %q twice for attempt %d", b.ActionID, b.Attempt)
		case a.intent.policy().replayable():
			return st.corrupt(r, "action_reconciled %q of a %s action, which replays", b.ActionID, a.intent.policy())
		}
		return nil
	}
	return st.corrupt(r, "action_reconciled %q names no action of the batch", b.ActionID)
}

// foldReconciled marks the action a reconciliation answered.
func (st *logState) foldReconciled(b *ActionReconciled) {
	for i, a := range st.batch {
		if a.intent != nil && a.intent.ActionID == b.ActionID {
			st.batch[i].reconciled = b
		}
	}
}

// replayable reports whether an open action runs again on resume: its
// policy replays it, or a reconciler answered that it did not happen.
func (a batchAction) replayable() bool {
	if a.intent.policy().replayable() {
		return true
	}
	return a.reconciled != nil && a.reconciled.Resolution == ResolutionRerun
}

// askable reports whether an open action of unknown outcome is one a
// reconciler is asked about: never_replay, not yet answered for its latest
// intent.
func (a batchAction) askable() bool {
	return a.open() && !a.intent.policy().replayable() && a.reconciled == nil
}

// checkAdopted refuses a settlement of a reconciled action that is not the
// outcome the reconciliation adopted: an action answered "completed" is
// settled at the attempt asked about, with the reported status.
func (st *logState) checkAdopted(r Record, s *SettledAction) error {
	i, ok := st.settles(s)
	if !ok {
		return nil
	}
	rec := st.batch[i].reconciled
	if rec == nil {
		return nil
	}
	if rec.Resolution != ResolutionAdopted {
		return st.corrupt(r, "%s %q settles an action reconciled %s", r.Kind(), s.ResultID, rec.Resolution)
	}
	if (s.Attempt != 0 && s.Attempt != rec.Attempt) || s.Outcome.Status != rec.Status {
		return st.corrupt(r, "%s %q is not the outcome its reconciliation adopted", r.Kind(), s.ResultID)
	}
	return nil
}
