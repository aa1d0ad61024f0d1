package polyloop

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Gates: an action that needs a person's decision (ToolSpec.Approval), or
// whose result comes from outside (ToolSpec.Deferred), waits at a gate. The
// loop records the request and the invocation returns with the run
// suspended (RunResult.Suspended); Runner.Approve or Runner.Deliver record
// the answer, and the next Resume goes on from it. Requests and answers are
// records of the log, so a gate is never lost and never asked twice.

// The record kinds of gates (log format 1.1).
const (
	KindApprovalRequested RecordKind = "approval_requested"
	KindApprovalDecided   RecordKind = "approval_decided"
	KindDeliveryRequested RecordKind = "delivery_requested"
	KindDeliveryReceived  RecordKind = "delivery_received"
)

// GateRequest is an action of a step's batch waiting at a gate. It is
// written before the action's intent — there is none for a deferred action,
// nor for a denied one.
type GateRequest struct {
	Step     int    `json:"step"`
	ActionID string `json:"action_id"`
	// Index and Of place the action in its batch, as on ActionIntent.
	Index  int    `json:"index,omitempty"`
	Of     int    `json:"of,omitempty"`
	Action Action `json:"action"`
	// Deadline is when the wait ends (the request's time plus the tool's
	// Deadline); nil: no deadline. A resume at or after it applies the
	// timeout decision.
	Deadline *time.Time `json:"deadline,omitempty"`
}

// ApprovalRequested asks a person to allow or deny an action.
type ApprovalRequested struct{ GateRequest }

// DeliveryRequested waits for the result of a deferred tool's action.
type DeliveryRequested struct{ GateRequest }

// ApprovalDecided is a person's decision on an approval request, or the
// timeout decision (deny) applied at a resume after its deadline.
type ApprovalDecided struct {
	Step     int    `json:"step"`
	ActionID string `json:"action_id"`
	Allow    bool   `json:"allow"`
	// By and Note are for people: who decided, and why. The note of a
	// denial is the action's audit text; neither enters the history.
	By   string `json:"by,omitempty"`
	Note string `json:"note,omitempty"`
	// Timeout: the deadline had passed; Clock is the time the resume saw.
	Timeout bool       `json:"timeout,omitempty"`
	Clock   *time.Time `json:"clock,omitempty"`
}

// DeliveryReceived is the result of a deferred tool's action, delivered from
// outside, or the timeout outcome (env_error) applied at a resume after its
// deadline. The loop settles it as if the executor had returned it.
type DeliveryReceived struct {
	Step     int           `json:"step"`
	ActionID string        `json:"action_id"`
	Outcome  ActionOutcome `json:"outcome"`
	By       string        `json:"by,omitempty"`
	Timeout  bool          `json:"timeout,omitempty"`
	Clock    *time.Time    `json:"clock,omitempty"`
}

func (*ApprovalRequested) recordBody() {}
func (*ApprovalDecided) recordBody()   {}
func (*DeliveryRequested) recordBody() {}
func (*DeliveryReceived) recordBody()  {}

// Kind implements RecordBody.
func (*ApprovalRequested) Kind() RecordKind { return KindApprovalRequested }

// Kind implements RecordBody.
func (*ApprovalDecided) Kind() RecordKind { return KindApprovalDecided }

// Kind implements RecordBody.
func (*DeliveryRequested) Kind() RecordKind { return KindDeliveryRequested }

// Kind implements RecordBody.
func (*DeliveryReceived) Kind() RecordKind { return KindDeliveryReceived }

func (g *GateRequest) validate(kind RecordKind) error {
	if g.Step < 1 || g.ActionID == "" || g.Of < 0 || g.Index < 0 || g.Index >= max(g.Of, 1) {
		return fmt.Errorf("%s: step %d, action_id %q, index %d of %d", kind, g.Step, g.ActionID, g.Index, g.Of)
	}
	return nil
}

// Validate implements RecordBody.
func (b *ApprovalRequested) Validate() error { return b.validate(KindApprovalRequested) }

// Validate implements RecordBody.
func (b *DeliveryRequested) Validate() error { return b.validate(KindDeliveryRequested) }

// Validate implements RecordBody.
func (b *ApprovalDecided) Validate() error {
	if b.Step < 1 || b.ActionID == "" {
		return fmt.Errorf("approval_decided: step %d, action_id %q", b.Step, b.ActionID)
	}
	if b.Timeout && (b.Allow || b.Clock == nil) {
		return fmt.Errorf("approval_decided: a timeout denies and records the clock it saw")
	}
	return nil
}

// Validate implements RecordBody.
func (b *DeliveryReceived) Validate() error {
	if b.Step < 1 || b.ActionID == "" || !b.Outcome.Status.Valid() {
		return fmt.Errorf("delivery_received: step %d, action_id %q, status %q", b.Step, b.ActionID, b.Outcome.Status)
	}
	if b.Timeout && (b.Outcome.Status != EnvError || b.Clock == nil) {
		return fmt.Errorf("delivery_received: a timeout is an env_error and records the clock it saw")
	}
	return nil
}

func (t ToolSpec) validateGate(policy *ApprovalPolicy) error {
	switch t.Approval {
	case "", ApprovalRequired:
	case ApprovalByPolicy:
		if policy == nil || policy.Needs == nil || policy.Name == "" {
			return fmt.Errorf("approval %q needs Agent.ApprovalPolicy with a Name and Needs", t.Approval)
		}
	default:
		return fmt.Errorf("unknown approval mode %q (want %q or %q)", t.Approval, ApprovalRequired, ApprovalByPolicy)
	}
	if t.Deferred && t.Approval != "" {
		return fmt.Errorf("a deferred tool's results come from outside: it takes no approval")
	}
	if t.Deadline < 0 {
		return fmt.Errorf("negative deadline %v", t.Deadline)
	}
	if t.Deadline > 0 && t.Approval == "" && !t.Deferred {
		return fmt.Errorf("a deadline bounds an approval or a delivery, and the tool has neither")
	}
	return nil
}

func (a Agent) approvalNeeds() func(Action) bool {
	if a.ApprovalPolicy == nil {
		return nil
	}
	return a.ApprovalPolicy.Needs
}

// Suspension is what a suspended run waits for: the gates of the open step
// that have no answer yet, in batch order.
type Suspension struct {
	Approvals  []PendingGate `json:"approvals,omitempty"`
	Deliveries []PendingGate `json:"deliveries,omitempty"`
}

// PendingGate is an action waiting at a gate.
type PendingGate struct {
	Step     int        `json:"step"`
	ActionID string     `json:"action_id"`
	Action   Action     `json:"action"`
	Deadline *time.Time `json:"deadline,omitempty"`
}

// PendingGates returns what a run waits for: the gates of its open step
// with no answer yet (empty when it waits for nothing). A log that breaks
// the grammar gives a *CorruptLogError.
func PendingGates(log RunLog) (*Suspension, error) {
	st, err := foldLog(log)
	if err != nil {
		return nil, err
	}
	return st.suspension(), nil
}

// Gate errors.
var (
	// ErrNoPendingGate: Approve or Deliver named an action that waits at no
	// gate of that kind.
	ErrNoPendingGate = errors.New("polyloop: no such action waits for an answer")
	// ErrAlreadyAnswered: Approve or Deliver named an action whose gate was
	// already answered (decided, delivered, or timed out), in the open step
	// or an earlier one.
	ErrAlreadyAnswered = errors.New("polyloop: the action's gate was already answered")
	// ErrDeadlinePassed: Approve or Deliver came at or after the gate's
	// deadline; nothing is written, and the next resume records the
	// timeout answer.
	ErrDeadlinePassed = errors.New("polyloop: the gate's deadline has passed")
)

// ApprovalDecision is a person's answer to an approval request.
type ApprovalDecision struct {
	Allow bool
	// By and Note are recorded for people (never in the history).
	By, Note string
}

// Approve records a decision on an action waiting for approval: action is
// its action id (such as "a3" or "a3.2") or the provider's tool-call id.
// The next Resume goes on from it: an allowed action runs, a denied one is
// not_executed with the agent's synthetic denied text. An action already
// decided gives ErrAlreadyAnswered; one that waits for no approval
// ErrNoPendingGate; a decision at or after the gate's deadline
// ErrDeadlinePassed (by the Runner's Clock, as the resume that applies the
// deadline reads it).
//
// Approve opens the run as Resume does: it holds the run's lease while it
// reads and appends (on a store that is a Leaser) — while a process drives
// the run, its other actions still running, the answer is refused with
// ErrLeaseHeld, naming the holder, and nothing is written; answer once the
// run is suspended — and a dead holder's lease it takes over is recorded
// with the answer. The answer reaches the Runner's sinks (gate_answered)
// once it is durable. Store failures are *PersistenceError; without leases,
// a concurrent writer makes the append fail with the sequence conflict,
// and nothing is written.
func (r *Runner) Approve(ctx context.Context, runID, action string, d ApprovalDecision) error {
	return r.answer(ctx, runID, action, KindApprovalRequested, func(req *GateRequest) RecordBody {
		return &ApprovalDecided{Step: req.Step, ActionID: req.ActionID, Allow: d.Allow, By: d.By, Note: d.Note}
	})
}

// Deliver records the result of a deferred tool's action (action as for
// Approve). The next Resume settles it as if the executor had returned it;
// the statuses keep their meaning. Errors as for Approve; an outcome whose
// status is not one of the three is ErrInvalidOutcome.
func (r *Runner) Deliver(ctx context.Context, runID, action string, out ActionOutcome, by string) error {
	if !out.Status.Valid() {
		return fmt.Errorf("%w: status %q", ErrInvalidOutcome, out.Status)
	}
	return r.answer(ctx, runID, action, KindDeliveryRequested, func(req *GateRequest) RecordBody {
		return &DeliveryReceived{Step: req.Step, ActionID: req.ActionID, Outcome: out, By: by}
	})
}

// answer records a gate's answer through the one write path of an opened
// run: the store, then the sinks (gate_answered).
func (r *Runner) answer(ctx context.Context, runID, action string, kind RecordKind, build func(*GateRequest) RecordBody) error {
	if r.Store == nil {
		return fmt.Errorf("%w: Runner.Store is nil", ErrInvalidConfig)
	}
	o, ctx, err := r.open(ctx, runID, false)
	if err != nil {
		return fmt.Errorf("run %q: %w", runID, err)
	}
	defer o.close(ctx)
	if o.log.Empty() {
		return fmt.Errorf("%w: %q", ErrRunNotFound, runID)
	}
	g, err := o.st.gateFor(action, kind)
	if errors.Is(err, ErrNoPendingGate) && gateRequested(o.log, action, kind) {
		err = fmt.Errorf("%w: %s, in a step that is over", ErrAlreadyAnswered, action)
	}
	if err != nil {
		return fmt.Errorf("run %q: %w", runID, err)
	}
	if now := r.now(); g.expired(now) {
		return fmt.Errorf("run %q: %w: %s waited until %s (now %s); resume records the timeout", runID, ErrDeadlinePassed,
			g.request.ActionID, g.request.Deadline.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	d := o.driver(Agent{}, ResumeOptions{})
	d.m.add(build(g.request))
	return d.write(ctx, d.m.take())
}

// gateRequested reports whether the log holds a gate request of kind for
// action (an action id or a tool-call id) in any step.
func gateRequested(log RunLog, action string, kind RecordKind) bool {
	for _, rec := range log.Records {
		var g *GateRequest
		switch b := rec.Body.(type) {
		case *ApprovalRequested:
			g = &b.GateRequest
		case *DeliveryRequested:
			g = &b.GateRequest
		}
		if g != nil && rec.Body.Kind() == kind && (g.ActionID == action || (action != "" && g.Action.CallID == action)) {
			return true
		}
	}
	return false
}
