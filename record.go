package polyloop

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/polyloop/polyloop/diag"
)

// LogVersion is the major version of the log format written by this
// library (docs/log-format.md), as RunStarted.LogVersion names it.
const LogVersion = 1

// MaxRecordVersion is the greatest record version this library reads. A
// record's "v" is the major version a reader must know to read that record:
// 1 for every record, but 2 for an action_intent that leaves its action out
// for a tool call (ActionIntent.ToolCall), which a reader that does not
// know tool_call would misread. A reader refuses a record of a greater
// version with ErrLogVersion; a record of version 2 that is not such an
// intent does not decode; and 3 for a run_started that refers to a shared
// snapshot instead of holding it (SnapshotKeeper), which only a reader
// that knows snapshot_ref reads.
const MaxRecordVersion = 3

// LogMinorVersion is the minor version of the format this library writes.
// A reader of minor m reads every log of minor m or lower. A minor version
// adds record kinds and fields that older readers skip, and records those
// readers must refuse carry a greater "v" (MaxRecordVersion). The version is
// written in RunStarted.LogVersion ("1.3"); a log without it is "1.0".
const LogMinorVersion = 3

// logVersionString is "<LogVersion>.<LogMinorVersion>".
const logVersionString = "1.3"

// RecordKind names a record's kind; it is the "kind" field of its JSON.
type RecordKind string

// The record kinds.
const (
	KindRunStarted      RecordKind = "run_started"
	KindModelCallIntent RecordKind = "model_call_intent"
	KindModelCallResult RecordKind = "model_call_result"
	KindActionIntent    RecordKind = "action_intent"
	KindStepCompleted   RecordKind = "step_completed"
	KindRunFinished     RecordKind = "run_finished"
	// KindConfigOverride records that a resume went on with a configuration
	// whose snapshot hash differs from the stored one, by explicit request.
	KindConfigOverride RecordKind = "config_override"
	// KindChildReception records how a parent received a child run's outcome.
	KindChildReception RecordKind = "child_reception"
	// KindActionResult settles one action of a batch that is not the last
	// to be settled (the step record settles the last one). Since 1.1.
	KindActionResult RecordKind = "action_result"
)

// Record is one entry of a run log. It marshals to one flat JSON object:
// the envelope fields "seq", "at", "kind" and "v" followed by the fields of
// its Body.
type Record struct {
	// Seq is the record's position in its run: 0, 1, 2, ...
	Seq int64
	// At is when the record was built; for people, never for logic.
	At time.Time
	// Body is one of *RunStarted, *ModelCallIntent, *ModelCallResult,
	// *ActionIntent, *ActionResult, *StepCompleted, *RunFinished,
	// *ConfigOverride, *ChildReception, the gate records and the
	// maintenance records (*MaintenanceOp, *MaintenanceDone).
	Body RecordBody
}

// RecordBody is the kind-specific part of a record. The interface is sealed.
type RecordBody interface {
	Kind() RecordKind
	// Validate checks the body's own invariants.
	Validate() error
	recordBody()
}

// Kind is the kind of the record's body, or "" for a record without one.
func (r Record) Kind() RecordKind {
	if r.Body == nil {
		return ""
	}
	return r.Body.Kind()
}

// RunStarted is the first record of every run.
type RunStarted struct {
	RunID          string   `json:"run_id"`
	Snapshot       Snapshot `json:"snapshot"`
	SnapshotHash   string   `json:"snapshot_hash"`
	LibraryVersion string   `json:"library_version"`
	// LogVersion is the version of the format the run was started with
	// ("1.3"); empty in logs of version 1.0.
	LogVersion string `json:"log_version,omitempty"`
	// Parent identifies the parent run for a child run (InvokeChild).
	Parent *ParentRef `json:"parent,omitempty"`
	// ForkedFrom is set for a run forked from another (Runner.Fork): the
	// records 1 … ForkedFrom.Copied that follow are copies of the source's,
	// with the same seq and time; ReplayOf for a replay of another run's
	// recorded replies (polyloop replay).
	ForkedFrom *RunSource `json:"forked_from,omitempty"`
	ReplayOf   *RunSource `json:"replay_of,omitempty"`
}

// RunSource names the run a fork or a replay comes from.
type RunSource struct {
	RunID string `json:"run_id"`
	// SnapshotHash is the source's snapshot hash (at the fork's step);
	// Fields name how the new run's snapshot differs from it.
	SnapshotHash string   `json:"snapshot_hash"`
	Fields       []string `json:"fields,omitempty"`
	// AtStep and Copied, for a fork: the source's steps 1 … AtStep are the
	// fork's own first steps, as the Copied records after run_started.
	AtStep int `json:"at_step,omitempty"`
	Copied int `json:"copied,omitempty"`
	// CopiedUnder, for a fork with copies (log format 1.3 on), is what the
	// copies ran under, so the fork's log stands alone when the source is
	// gone: the first configuration is in force from record 1, each next
	// one from its From on (a fork of a fork copies its source's copies and
	// some of its source's own steps); the copied config_override records
	// apply as they come, and after the copies the fork's own snapshot is
	// in force. Absent in the forks of earlier versions, whose copies were
	// folded under the fork's own snapshot.
	CopiedUnder []CopiedConfig `json:"copied_under,omitempty"`
}

// CopiedConfig is a configuration in force in a fork's copies from the
// record From on.
type CopiedConfig struct {
	From         int64    `json:"from"`
	SnapshotHash string   `json:"snapshot_hash"`
	Snapshot     Snapshot `json:"snapshot"`
}

// ParentRef names the action of a parent run that started a child.
type ParentRef struct {
	RunID string `json:"run_id"`
	Step  int    `json:"step"`
	// Action is the position of the action in its step's batch (0 for the
	// first; omitted for it).
	Action int `json:"action,omitempty"`
	// Index counts the children of the action in call order; Key is the
	// caller's name for the child, when given (see Child.Key).
	Index int    `json:"index"`
	Key   string `json:"key,omitempty"`
	// Maintenance: the child was started by the step's maintenance
	// (Maintainer), not by an action; Action is then 0.
	Maintenance bool `json:"maintenance,omitempty"`
}

// ModelCallIntent is written before a model call.
type ModelCallIntent struct {
	Step    int    `json:"step"`
	CallID  string `json:"call_id"`
	Attempt int    `json:"attempt"`
	// View is the immutable view version the call shows (AgentMemory);
	// nil when the agent has no view.
	View *ViewRef `json:"view,omitempty"`
}

// ModelCallResult is written right after a model call returns, before
// anything else happens. Exactly one of Reply and Failure is set.
type ModelCallResult struct {
	Step   int    `json:"step"`
	CallID string `json:"call_id"`
	// Attempt is the attempt of the intent this result answers (0 in logs
	// of version 1.0).
	Attempt int              `json:"attempt,omitempty"`
	Reply   *ModelReply      `json:"reply,omitempty"`
	Failure *diag.Diagnostic `json:"failure,omitempty"`
	// Usage is what a failed call is known to have consumed (a reply the
	// library or the client rejected, a stream broken part-way); nil when
	// nothing is known. A successful call's usage is in Reply.
	Usage *Usage `json:"usage,omitempty"`
}

// ActionIntent is written before an action executes. A replayed action gets
// a new ActionIntent with the same ActionID and the next Attempt.
type ActionIntent struct {
	Step     int    `json:"step"`
	ActionID string `json:"action_id"`
	Attempt  int    `json:"attempt"`
	// ModelCallID is the id of the model result the action came from.
	ModelCallID string       `json:"model_call_id"`
	Action      Action       `json:"action"`
	Replay      ReplayPolicy `json:"replay"`
	// Index is the action's position in its step's batch (0-based) and Of
	// the batch's size; both are omitted for a batch of one (Of 0 means 1).
	Index int `json:"index,omitempty"`
	Of    int `json:"of,omitempty"`
	// ToolCall, when positive, says the action is the tool call at that
	// position (1 for the first) of the reply in the model result
	// ModelCallID: its call id, tool and arguments are that call's (a log
	// whose intent is not its call is corrupt). Action is either that call
	// or empty. An Append that holds the model result writes the intent as
	// a reference (since 1.2: Action left out, the record's "v" 2) and
	// refuses it when Action is neither; an Append without the model result
	// writes Action as it is, with ToolCall, unless it is empty. Reading
	// back takes an action left out from the reply (ReadLog, and the fold
	// of every log), so every store reads back what memstore keeps.
	// The library sets it only in runs started with log format 1.2 or later.
	ToolCall int `json:"tool_call,omitempty"`
	// IdempotencyKey is the key the action is executed with
	// (IdempotencyKeyFor): derived by its first attempt, carried on by
	// every replay. Omitted in logs of a format before 1.3, where it is
	// derived from the intent when needed. Since 1.3.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// EnvSnapshot names the durable snapshot of the run's environment the
	// action starts from (SPEC §13: intent before every effect, extended to
	// the environment); empty for a run without an environment. A resume
	// of a restore_and_replay action restores it. Since 1.3.
	EnvSnapshot EnvSnapshot `json:"env_snapshot,omitempty"`
}

// BatchSize is the size of the intent's batch: Of, or 1 when omitted.
func (b *ActionIntent) BatchSize() int { return max(b.Of, 1) }

// SettledAction is the settled outcome of one action, as the log keeps it:
// in an ActionResult record, or — for the last action of a batch to be
// settled — in the step record. ResultID is empty if and only if Outcome is
// nil.
type SettledAction struct {
	// ResultID is the id of the action whose outcome this is.
	ResultID string `json:"result_id,omitempty"`
	// Attempt is the attempt of the intent this outcome settles (0 in logs
	// of version 1.0).
	Attempt int `json:"attempt,omitempty"`
	// Outcome is the action's status and completion signal.
	Outcome *StepOutcome `json:"outcome,omitempty"`
	// Observation is the text as entered in the history.
	Observation string `json:"observation,omitempty"`
	Synthetic   bool   `json:"synthetic,omitempty"`
	// TruncatedChars counts the characters dropped from the observation,
	// by the executor and by the observation limit; 0 when synthetic.
	TruncatedChars int `json:"truncated_chars,omitempty"`
	// Audit is the executor's own text when the history got the synthetic
	// one (not_executed, env_error), bounded to MaxAuditBytes. It is kept
	// for people (show, export, events) and never enters the history: it
	// is not in the snapshot and could differ between runs.
	Audit string `json:"audit,omitempty"`
	// EnvSnapshot names the durable snapshot of the run's environment
	// taken after the action: the world the next action starts from, and
	// what a resume between steps restores. Empty for a run without an
	// environment, or when the snapshot could not be taken (the outcome is
	// then env_error). Since 1.3.
	EnvSnapshot EnvSnapshot `json:"env_snapshot,omitempty"`
}

// MaxAuditBytes bounds SettledAction.Audit.
const MaxAuditBytes = 2048

// ActionResult settles one action of a batch before the batch ends: every
// action but the last one settled, whose outcome is in the step record.
type ActionResult struct {
	Step int `json:"step"`
	SettledAction
}

// StepCompleted is written after a step ends. For an Act decision it
// settles the last action of the batch to be settled (the others have
// ActionResult records); a step whose decision was Invalid or Final settles
// none, and its ResultID and Outcome are both empty.
type StepCompleted struct {
	Step        int          `json:"step"`
	ModelCallID string       `json:"model_call_id"`
	Decision    DecisionKind `json:"decision"`
	// Feedback is the Invalid decision's feedback; Answer the Final one's.
	Feedback string `json:"feedback,omitempty"`
	Answer   string `json:"answer,omitempty"`
	SettledAction
}

// StepOutcome is the part of an ActionOutcome that the log keeps.
type StepOutcome struct {
	Status ActionStatus `json:"status"`
	Done   bool         `json:"done,omitempty"`
	// ExecutorTruncated is what the executor itself reported dropping.
	ExecutorTruncated int `json:"executor_truncated,omitempty"`
}

// RunFinished is the last record of a run.
type RunFinished struct {
	StopReason  StopReason `json:"stop_reason"`
	FinalAnswer string     `json:"final_answer,omitempty"`
	Totals      Totals     `json:"totals"`
	// Sinks reports event delivery failures of the invocation that finished
	// the run.
	Sinks []SinkReport `json:"sinks,omitempty"`
}

// ConfigOverride records that Resume continued, by explicit request, with a
// configuration whose snapshot differs from the one in force. Snapshot is in
// force from here on.
type ConfigOverride struct {
	PreviousHash string   `json:"previous_hash"`
	SnapshotHash string   `json:"snapshot_hash"`
	Fields       []string `json:"fields"`
	Snapshot     Snapshot `json:"snapshot"`
}

// Reception is how a parent received a child's outcome.
type Reception string

// The receptions.
const (
	// ReceptionAccepted: the child completed and its result was taken as is
	// (no Succeeded handler), or failed and propagated (no Failed handler).
	ReceptionAccepted Reception = "accepted"
	// ReceptionHandled: a handler ran and returned Value.
	ReceptionHandled Reception = "handled"
	// ReceptionFailed: a handler ran and failed; Failure describes it.
	ReceptionFailed Reception = "reception_failed"
)

// ChildReception is the parent's record of receiving a child run's outcome.
type ChildReception struct {
	Step int `json:"step"`
	// Action is the position in the step's batch of the action that
	// received the child (omitted for the first).
	Action     int              `json:"action,omitempty"`
	Index      int              `json:"index"`
	Key        string           `json:"key,omitempty"`
	ChildRunID string           `json:"child_run_id"`
	StopReason StopReason       `json:"stop_reason"`
	Handler    string           `json:"handler,omitempty"`
	Reception  Reception        `json:"reception"`
	Value      json.RawMessage  `json:"value,omitempty"`
	Failure    *diag.Diagnostic `json:"failure,omitempty"`
	// Maintenance: the child was received by the step's maintenance, after
	// the step record.
	Maintenance bool `json:"maintenance,omitempty"`
}

func (*RunStarted) recordBody()      {}
func (*ModelCallIntent) recordBody() {}
func (*ModelCallResult) recordBody() {}
func (*ActionIntent) recordBody()    {}
func (*StepCompleted) recordBody()   {}
func (*RunFinished) recordBody()     {}
func (*ConfigOverride) recordBody()  {}
func (*ChildReception) recordBody()  {}
func (*ActionResult) recordBody()    {}

// Kind implements RecordBody.
func (*RunStarted) Kind() RecordKind { return KindRunStarted }

// Kind implements RecordBody.
func (*ModelCallIntent) Kind() RecordKind { return KindModelCallIntent }

// Kind implements RecordBody.
func (*ModelCallResult) Kind() RecordKind { return KindModelCallResult }

// Kind implements RecordBody.
func (*ActionIntent) Kind() RecordKind { return KindActionIntent }

// Kind implements RecordBody.
func (*StepCompleted) Kind() RecordKind { return KindStepCompleted }

// Kind implements RecordBody.
func (*RunFinished) Kind() RecordKind { return KindRunFinished }

// Kind implements RecordBody.
func (*ConfigOverride) Kind() RecordKind { return KindConfigOverride }

// Kind implements RecordBody.
func (*ChildReception) Kind() RecordKind { return KindChildReception }

// Kind implements RecordBody.
func (*ActionResult) Kind() RecordKind { return KindActionResult }

// Validate implements RecordBody.
func (b *RunStarted) Validate() error {
	if b.RunID == "" {
		return fmt.Errorf("run_started: empty run_id")
	}
	if b.SnapshotHash == "" {
		return fmt.Errorf("run_started: empty snapshot_hash")
	}
	return nil
}

// Validate implements RecordBody.
func (b *ModelCallIntent) Validate() error {
	if b.Step < 1 || b.CallID == "" || b.Attempt < 1 {
		return fmt.Errorf("model_call_intent: step %d, call_id %q, attempt %d", b.Step, b.CallID, b.Attempt)
	}
	if v := b.View; v != nil && (v.Name == "" || v.Version < 0) {
		return fmt.Errorf("model_call_intent: view %q version %d", v.Name, v.Version)
	}
	return nil
}

// Validate implements RecordBody.
func (b *ModelCallResult) Validate() error {
	if b.Step < 1 || b.CallID == "" {
		return fmt.Errorf("model_call_result: step %d, call_id %q", b.Step, b.CallID)
	}
	if (b.Reply == nil) == (b.Failure == nil) {
		return fmt.Errorf("model_call_result: exactly one of reply and failure must be set")
	}
	return nil
}

// Validate implements RecordBody.
func (b *ActionIntent) Validate() error {
	if b.Step < 1 || b.ActionID == "" || b.Attempt < 1 || b.ModelCallID == "" {
		return fmt.Errorf("action_intent: step %d, action_id %q, attempt %d, model_call_id %q", b.Step, b.ActionID, b.Attempt, b.ModelCallID)
	}
	if b.Replay != ReplaySafe && b.Replay != NeverReplay && b.Replay != ReplayIdempotent && b.Replay != RestoreAndReplay {
		return fmt.Errorf("action_intent: replay policy %q", b.Replay)
	}
	if b.Of < 0 || b.Index < 0 || b.Index >= b.BatchSize() {
		return fmt.Errorf("action_intent: index %d of a batch of %d", b.Index, b.BatchSize())
	}
	if b.ToolCall < 0 || (b.ToolCall > 0 && b.Action.IsCode() && !b.Action.empty()) {
		return fmt.Errorf("action_intent: code action as tool call %d", b.ToolCall)
	}
	if b.Replay == RestoreAndReplay && b.EnvSnapshot == "" {
		return fmt.Errorf("action_intent: restore_and_replay without an env_snapshot")
	}
	return nil
}

// validate checks a settlement: an outcome with a valid status, a result
// id, and a synthetic flag that matches the status.
func (s *SettledAction) validate(kind RecordKind) error {
	if s.ResultID == "" || s.Outcome == nil {
		return fmt.Errorf("%s: result_id %q and outcome must be both set", kind, s.ResultID)
	}
	if !s.Outcome.Status.Valid() {
		return fmt.Errorf("%s: unknown status %q", kind, s.Outcome.Status)
	}
	if s.Synthetic != (s.Outcome.Status != Executed) {
		return fmt.Errorf("%s: synthetic flag %v does not match status %q", kind, s.Synthetic, s.Outcome.Status)
	}
	return nil
}

// Validate implements RecordBody.
func (b *ActionResult) Validate() error {
	if b.Step < 1 {
		return fmt.Errorf("action_result: step %d", b.Step)
	}
	return b.SettledAction.validate(KindActionResult)
}

// Validate implements RecordBody. It enforces the invariant that ResultID is
// empty if and only if Outcome is nil.
func (b *StepCompleted) Validate() error {
	if b.Step < 1 || b.ModelCallID == "" {
		return fmt.Errorf("step_completed: step %d, model_call_id %q", b.Step, b.ModelCallID)
	}
	if (b.ResultID == "") != (b.Outcome == nil) {
		return fmt.Errorf("step_completed: result_id %q and outcome must be both set or both empty", b.ResultID)
	}
	switch b.Decision {
	case DecisionAct:
		if b.Outcome == nil {
			return fmt.Errorf("step_completed: act decision without outcome")
		}
		return b.SettledAction.validate(KindStepCompleted)
	case DecisionFinal, DecisionInvalid:
		if b.Outcome != nil || b.Audit != "" {
			return fmt.Errorf("step_completed: %s decision with an outcome", b.Decision)
		}
	default:
		return fmt.Errorf("step_completed: unknown decision %q", b.Decision)
	}
	return nil
}

// Validate implements RecordBody.
func (b *RunFinished) Validate() error {
	if !b.StopReason.Valid() {
		return fmt.Errorf("run_finished: unknown stop reason %q", b.StopReason)
	}
	return nil
}

// Validate implements RecordBody.
func (b *ConfigOverride) Validate() error {
	if b.SnapshotHash == "" || b.PreviousHash == "" {
		return fmt.Errorf("config_override: empty hash")
	}
	return nil
}

// Validate implements RecordBody.
func (b *ChildReception) Validate() error {
	switch b.Reception {
	case ReceptionAccepted, ReceptionHandled, ReceptionFailed:
	default:
		return fmt.Errorf("child_reception: unknown reception %q", b.Reception)
	}
	if b.ChildRunID == "" || b.Step < 1 || b.Action < 0 || (b.Maintenance && b.Action != 0) {
		return fmt.Errorf("child_reception: step %d, action %d, child_run_id %q", b.Step, b.Action, b.ChildRunID)
	}
	return nil
}
