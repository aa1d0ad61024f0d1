package polyloop

import "time"

// gateKind is the gate an action waits at: an approval (the tool's
// Approval, or the approval policy's say), a delivery (a deferred tool), or
// none.
func (m *machine) gateKind(a Action) RecordKind {
	t, ok := m.st.tools[a.Tool]
	switch {
	case a.IsCode() || !ok:
		return ""
	case t.Deferred:
		return KindDeliveryRequested
	case t.Approval == ApprovalRequired, t.Approval == ApprovalByPolicy && m.needsApproval != nil && m.needsApproval(a):
		return KindApprovalRequested
	}
	return ""
}

func (m *machine) requestGate(i int, kind RecordKind) {
	st, a, n := m.st, m.actions[i], len(m.actions)
	g := GateRequest{Step: st.step, ActionID: actionID(st.step, i, n), Index: i, Action: a}
	if n > 1 {
		g.Of = n
	}
	if d := st.tools[a.Tool].Deadline; d > 0 {
		at := m.now.Add(d).UTC()
		g.Deadline = &at
	}
	if kind == KindDeliveryRequested {
		m.add(&DeliveryRequested{g})
	} else {
		m.add(&ApprovalRequested{g})
	}
}

// expireGates records the timeout answer of every unanswered gate of the
// batch whose deadline has passed (an approval denied, a delivery an
// env_error), with the clock it saw — all of them, in the batch's order,
// so that a serial batch waiting at an earlier gate applies the later
// gates' deadlines too.
func (m *machine) expireGates() {
	for _, a := range m.st.batch {
		g := a.gate
		if g == nil || g.answered() || !g.expired(m.now) {
			continue
		}
		d, clock := g.request.Deadline, m.now.UTC()
		if g.kind == KindApprovalRequested {
			m.add(&ApprovalDecided{Step: g.request.Step, ActionID: g.request.ActionID, Timeout: true, Clock: &clock,
				Note: "no decision before the deadline " + d.Format(time.RFC3339)})
		} else {
			m.add(&DeliveryReceived{Step: g.request.Step, ActionID: g.request.ActionID, Timeout: true, Clock: &clock,
				Outcome: ActionOutcome{Status: EnvError, Observation: "no delivery before the deadline " + d.Format(time.RFC3339)}})
		}
	}
}

// settleGate settles an action its gate answered without running it: a
// denial is not_executed with the synthetic denied text (the note as
// audit), a delivery is settled as if the executor had returned it. It
// reports whether that completed the batch.
func (m *machine) settleGate(i int) bool {
	g := m.st.batch[i].gate
	if g.delivered != nil {
		return m.settleOutcome(i, g.delivered.Outcome, g.request.ActionID, 0, "")
	}
	s := SettledAction{ResultID: g.request.ActionID,
		Observation: m.st.synth.Denied, Synthetic: true, Audit: truncateBytes(g.decided.Note, MaxAuditBytes)}
	return m.record(s, StepOutcome{Status: NotExecuted})
}
