package polyloop

import (
	"fmt"
	"time"
)

// gateState is an action's gate: its request and its answer.
type gateState struct {
	kind      RecordKind // KindApprovalRequested or KindDeliveryRequested
	request   *GateRequest
	decided   *ApprovalDecided
	delivered *DeliveryReceived
}

func (g *gateState) answered() bool { return g.decided != nil || g.delivered != nil }

// expired reports whether the gate's deadline has passed at now: at or
// after it, a resume records the timeout answer and no answer is taken.
func (g *gateState) expired(now time.Time) bool {
	d := g.request.Deadline
	return d != nil && !now.Before(*d)
}

func (st *logState) checkGateRequest(r Record, g *GateRequest) error {
	if g.Step != st.step || (st.phase != phaseModelResult && st.phase != phaseActing) {
		return st.corrupt(r, "%s %q of step %d without a model result it can come from", r.Kind(), g.ActionID, g.Step)
	}
	if st.phase == phaseModelResult {
		return nil
	}
	if max(g.Of, 1) != len(st.batch) {
		return st.corrupt(r, "%s %q: batch of %d in a batch of %d", r.Kind(), g.ActionID, max(g.Of, 1), len(st.batch))
	}
	if a := st.batch[g.Index]; a.intent != nil || a.gate != nil || a.settled != nil {
		return st.corrupt(r, "%s %q for an action already requested or started", r.Kind(), g.ActionID)
	}
	return st.checkIDFree(r, g.Index, g.ActionID)
}

func (st *logState) checkGateAnswer(r Record, step int, id string, kind RecordKind) error {
	if st.phase == phaseActing && step == st.step {
		for _, a := range st.batch {
			if a.gate != nil && a.gate.kind == kind && a.gate.request.ActionID == id && !a.gate.answered() {
				return nil
			}
		}
	}
	return st.corrupt(r, "%s for %q, which waits for no such answer", r.Kind(), id)
}

// timed reports whether the next step of the machine may read the time: a
// tool of the snapshot in force has a deadline (a gate requested now gets
// one), the snapshot has a time limit (Limits.clocked), or an action of the
// open batch waits at a gate that has one.
func (st *logState) timed() bool {
	if st.deadlines || st.clocked {
		return true
	}
	for _, a := range st.batch {
		if a.gate != nil && a.gate.request.Deadline != nil {
			return true
		}
	}
	return false
}

// gateFor finds the action waiting at a gate of the given kind, by action id
// or tool-call id.
func (st *logState) gateFor(action string, kind RecordKind) (*gateState, error) {
	for _, a := range st.batch {
		g := a.gate
		if g == nil || g.kind != kind || (g.request.ActionID != action && (action == "" || g.request.Action.CallID != action)) {
			continue
		}
		if g.answered() {
			return nil, fmt.Errorf("%w: %s", ErrAlreadyAnswered, g.request.ActionID)
		}
		return g, nil
	}
	return nil, fmt.Errorf("%w: %q (%s)", ErrNoPendingGate, action, kind)
}

func (st *logState) gateOf(id string) *gateState {
	for _, a := range st.batch {
		if a.gate != nil && a.gate.request.ActionID == id {
			return a.gate
		}
	}
	return nil // the grammar checked that it exists
}

// suspension lists the gates of the open batch that have no answer yet.
func (st *logState) suspension() *Suspension {
	s := &Suspension{}
	for _, a := range st.batch {
		g := a.gate
		if g == nil || g.answered() {
			continue
		}
		p := PendingGate{Step: g.request.Step, ActionID: g.request.ActionID, Action: g.request.Action, Deadline: g.request.Deadline}
		if g.kind == KindApprovalRequested {
			s.Approvals = append(s.Approvals, p)
		} else {
			s.Deliveries = append(s.Deliveries, p)
		}
	}
	return s
}
