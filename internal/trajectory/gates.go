package trajectory

import (
	"time"

	"github.com/polyloop/polyloop"
)

// Gate is an action of a step that waited at a gate — for a person's
// approval or for a delivery from outside — with the request's record and,
// once answered, the answer's: an approval's decision (allowed or denied,
// by whom, with what note, or denied by the timeout a resume applied after
// the deadline) or a delivery (its outcome, by whom, or the timeout's
// env_error).
type Gate struct {
	// Kind is approval_requested or delivery_requested.
	Kind polyloop.RecordKind `json:"kind"`
	*polyloop.GateRequest
	Seq int64     `json:"seq"`
	At  time.Time `json:"at"`
	// Decision answers an approval, Delivery a delivery; both nil while the
	// gate waits.
	Decision   *polyloop.ApprovalDecided  `json:"decision,omitempty"`
	Delivery   *polyloop.DeliveryReceived `json:"delivery,omitempty"`
	AnswerSeq  int64                      `json:"answer_seq,omitempty"`
	AnsweredAt time.Time                  `json:"answered_at,omitzero"`
}

// Approval reports whether the gate asks for an approval (else it waits
// for a delivery).
func (g *Gate) Approval() bool { return g.Kind == polyloop.KindApprovalRequested }

// Waiting reports whether the gate has no answer yet.
func (g *Gate) Waiting() bool { return g.Decision == nil && g.Delivery == nil }

// TimedOut reports whether the answer is the timeout a resume applied after
// the deadline.
func (g *Gate) TimedOut() bool {
	return (g.Decision != nil && g.Decision.Timeout) || (g.Delivery != nil && g.Delivery.Timeout)
}

// gate is the step's gate of an action, or nil.
func (s *Step) gate(actionID string) *Gate {
	for _, g := range s.Gates {
		if g.ActionID == actionID {
			return g
		}
	}
	return nil
}

// Takeover is a lease_takeover record and where it stands in the log.
type Takeover struct {
	*polyloop.LeaseTakeover
	Seq int64     `json:"seq"`
	At  time.Time `json:"at"`
}
