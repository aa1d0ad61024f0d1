package polyloop

import (
	"time"

	"github.com/polyloop/polyloop/diag"
)

// EventVersion is the version of the event set (docs/events.md). It changes
// when an event kind or field changes meaning; adding a field does not.
const EventVersion = 1

// EventKind names an event.
type EventKind string

// The event set. Each event is emitted after the record it reflects is
// durable; Seq is that record's sequence number.
const (
	// EventRunStarted reflects RunStarted (Snapshot is set).
	EventRunStarted EventKind = "run_started"
	// EventRunResumed is emitted when Resume begins, after reading the log;
	// Plan is set and Seq is the last record read.
	EventRunResumed EventKind = "run_resumed"
	// EventStepStarted and EventModelCallStarted reflect ModelCallIntent.
	EventStepStarted      EventKind = "step_started"
	EventModelCallStarted EventKind = "model_call_started"
	// EventModelCallFinished reflects ModelCallResult: Reply (usage, model,
	// finish reason) or Failure.
	EventModelCallFinished EventKind = "model_call_finished"
	// EventActionStarted reflects ActionIntent (Action, Replay).
	EventActionStarted EventKind = "action_started"
	// EventActionFinished reflects the record that settles an action (an
	// ActionResult, or the StepCompleted of the last action of a batch) and
	// carries the executor's own outcome — including its observation text
	// when the history got the synthetic one (the audit channel).
	EventActionFinished EventKind = "action_finished"
	// EventStepCompleted reflects StepCompleted.
	EventStepCompleted EventKind = "step_completed"
	// EventRunFinished reflects RunFinished (StopReason, Totals).
	EventRunFinished EventKind = "run_finished"
	// EventConfigOverridden reflects ConfigOverride.
	EventConfigOverridden EventKind = "config_overridden"
	// EventChildReceived reflects ChildReception.
	EventChildReceived EventKind = "child_received"
	// EventModelDelta is a fragment of the reply of the model call under
	// way (Delta), from a StreamingModelClient: a preview, not a fact — it
	// reflects no record (Seq is the call's intent). Attempt is the
	// library's attempt of the call, Delta.Attempt the client's.
	EventModelDelta EventKind = "model_delta"
	// EventCandidateSuperseded says that a preview must be dropped: the
	// client's attempt Delta.Attempt of call CallID (attempt Attempt) ended
	// without becoming the reply, or, with Delta nil, every attempt of that
	// call did (it failed, was cancelled, or was left of unknown outcome and
	// is made again after a resume). Deltas of several candidates are never
	// one answer.
	EventCandidateSuperseded EventKind = "candidate_superseded"
	// EventLeaseTakenOver reflects LeaseTakeover (Takeover): this
	// invocation took the run over from a dead or forced-away holder.
	EventLeaseTakenOver EventKind = "lease_taken_over"
	// EventGateRequested reflects ApprovalRequested or DeliveryRequested
	// (Gate is set): an action waits for an answer.
	EventGateRequested EventKind = "gate_requested"
	// EventGateAnswered reflects ApprovalDecided or DeliveryReceived
	// (Answer is set).
	EventGateAnswered EventKind = "gate_answered"
	// EventMaintenanceOp reflects MaintenanceOp (Operation is set): an
	// operation of a step's maintenance and its outcome.
	EventMaintenanceOp EventKind = "maintenance_op"
	// EventMaintenanceDone reflects MaintenanceDone.
	EventMaintenanceDone EventKind = "maintenance_done"
	// EventStepCopied reflects the StepCompleted of a step a fork copied
	// from its source (StepRecord is set). A fork's copies are no new
	// facts: nothing ran, nothing was billed, so they give no other
	// event — no model_call_finished whose usage a consumer would count
	// twice —, only this one per copied step.
	EventStepCopied EventKind = "step_copied"

	// EventActionReconciled reflects ActionReconciled (Reconciled is set):
	// a reconciler answered for an action of unknown outcome.
	EventActionReconciled EventKind = "action_reconciled"
)

// Event is an observation of a fact already durable in the log. Fields that
// do not apply to a kind are zero.
type Event struct {
	V      int       `json:"v"`
	Kind   EventKind `json:"kind"`
	RunID  string    `json:"run_id"`
	Agent  string    `json:"agent,omitempty"`
	Step   int       `json:"step,omitempty"`
	Seq    int64     `json:"seq"`
	At     time.Time `json:"at"`
	CallID string    `json:"call_id,omitempty"`
	// Attempt of the model call or action.
	Attempt int `json:"attempt,omitempty"`

	// Snapshot and SnapshotHash, on run_started and run_resumed.
	Snapshot     *Snapshot `json:"snapshot,omitempty"`
	SnapshotHash string    `json:"snapshot_hash,omitempty"`
	// Plan, on run_resumed.
	Plan *ResumePlan `json:"plan,omitempty"`

	// Delta, on model_delta and on the candidate_superseded of one client
	// attempt.
	Delta *Delta `json:"delta,omitempty"`

	// Reply or Failure, on model_call_finished.
	Reply   *ModelReply      `json:"reply,omitempty"`
	Failure *diag.Diagnostic `json:"failure,omitempty"`

	// Usage, on model_call_finished of a failed call, is what the call is
	// known to have consumed.
	Usage *Usage `json:"usage,omitempty"`

	// Action and Replay on action_started and action_finished; Index is
	// the action's position in its step's batch.
	ActionID string       `json:"action_id,omitempty"`
	Action   *Action      `json:"action,omitempty"`
	Replay   ReplayPolicy `json:"replay,omitempty"`
	Index    int          `json:"index,omitempty"`
	// Outcome is the executor's own outcome, on action_finished.
	Outcome *ActionOutcome `json:"outcome,omitempty"`
	// StepRecord is the step record, on step_completed and on the
	// action_finished of the action it settles; ActionResult is the
	// action_result record, on the action_finished of an action settled
	// before the last of its batch.
	StepRecord   *StepCompleted `json:"step_record,omitempty"`
	ActionResult *ActionResult  `json:"action_result,omitempty"`

	// StopReason, FinalAnswer and Totals on run_finished.
	StopReason  StopReason `json:"stop_reason,omitempty"`
	FinalAnswer string     `json:"final_answer,omitempty"`
	Totals      *Totals    `json:"totals,omitempty"`

	// Override, on config_overridden; Reception on child_received.
	Override  *ConfigOverride `json:"override,omitempty"`
	Reception *ChildReception `json:"reception,omitempty"`
	// Gate, on gate_requested: the kind of the request record
	// (approval_requested or delivery_requested) and the request; Answer,
	// on gate_answered: the answer record's body (*ApprovalDecided or
	// *DeliveryReceived).
	Gate        RecordKind   `json:"gate,omitempty"`
	GateRequest *GateRequest `json:"gate_request,omitempty"`
	Answer      RecordBody   `json:"answer,omitempty"`
	// Takeover, on lease_taken_over.
	Takeover *LeaseTakeover `json:"takeover,omitempty"`

	// View, on step_started and model_call_started: the view version the
	// call shows. Operation, on maintenance_op: the record.
	View      *ViewRef       `json:"view,omitempty"`
	Operation *MaintenanceOp `json:"operation,omitempty"`
	// Reconciled, on action_reconciled: the record.
	Reconciled *ActionReconciled `json:"reconciled,omitempty"`
}

// Settled is the settlement an action_finished event reflects — its
// action_result's, or, for the last action of a batch, its step record's —
// and nil on any other event.
func (ev *Event) Settled() *SettledAction {
	switch {
	case ev.Kind != EventActionFinished:
		return nil
	case ev.ActionResult != nil:
		return &ev.ActionResult.SettledAction
	case ev.StepRecord != nil:
		return &ev.StepRecord.SettledAction
	}
	return nil
}
