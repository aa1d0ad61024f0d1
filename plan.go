package polyloop

import (
	"fmt"
	"strings"
)

// PlanAction is what Resume will do, as decided by PlanResume. Its values
// are those of the "action" field of a plan in events and CLI output.
type PlanAction string

// The plan actions.
const (
	// PlanStartStep: the log ends between steps; run step Step.
	PlanStartStep PlanAction = "start_step"
	// PlanRetryModelCall: a model-call intent has no result; model calls are
	// replayable, so a new intent (attempt Attempt) is written and the orphan
	// stays in the log.
	PlanRetryModelCall PlanAction = "retry_model_call"
	// PlanReparseReply: a model result has no action intent; the stored
	// reply is parsed again (no side effect happened since) and the run goes
	// on.
	PlanReparseReply PlanAction = "reparse_reply"
	// PlanReplayAction: actions of the open batch have an intent but no
	// outcome, and every one of them is replay_safe; the stored reply is
	// parsed again and each is executed again under a new intent (the next
	// attempt) with the same action id; actions of the batch not yet
	// started then run.
	PlanReplayAction PlanAction = "replay_action"
	// PlanRestoreAndReplay: an action of the open batch has an intent but
	// no outcome and its policy is restore_and_replay (it acts only inside
	// the run's network-isolated environment): the environment is restored
	// to the snapshot its intent names (EnvSnapshot), the state before its
	// effect, and the action runs again under a new intent (the next
	// attempt). Since log 1.3.
	PlanRestoreAndReplay PlanAction = "restore_and_replay"
	// PlanContinueBatch: the open batch has no action of unknown outcome
	// but some actions not yet started (the run was cancelled between two
	// actions); the stored reply is parsed again and they run.
	PlanContinueBatch PlanAction = "continue_batch"
	// PlanAwaitGates: actions of the open batch wait at gates (an approval,
	// a delivery) with no answer yet; resume applies any deadline that has
	// passed, runs what it can, and suspends again while a gate stays
	// unanswered.
	PlanAwaitGates PlanAction = "await_gates"
	// PlanStopUnknown: an action of the open batch has an intent but no
	// outcome and its policy is never_replay: whether its side effect
	// happened is unknown; the run finishes with StopResumeStateUnknown.
	PlanStopUnknown PlanAction = "stop_unknown"
	// PlanReconcile: actions of the open batch have an intent but no
	// outcome and their policy is never_replay: the executor's Reconciler,
	// if it has one, is asked about each (Reconcile lists them) — an
	// outcome it reports is adopted, an action it says did not happen runs
	// again with the same idempotency key, and one it cannot tell about
	// finishes the run with StopResumeStateUnknown, as does an executor
	// without a reconciler (StopReason says so).
	PlanReconcile PlanAction = "reconcile"
	// PlanWriteFinish: the log already determines the finish (env_error,
	// the environment's Done, a Final decision, a failed model call); only
	// the RunFinished record is missing and is written.
	PlanWriteFinish PlanAction = "finish"
	// PlanAlreadyFinished: the run is finished; nothing runs.
	PlanAlreadyFinished PlanAction = "finished"
	// PlanMaintain: the last step's maintenance is not done (no
	// maintenance_done); the agent's Maintainer runs again for it, reusing
	// the children and operations the log records of it.
	PlanMaintain PlanAction = "maintain"
)

// ResumePlan is what PlanResume decided for a log: a description, for
// people and events, of what Resume does. It is a pure function of the log.
type ResumePlan struct {
	Action PlanAction `json:"action"`
	// Step is the step the plan acts on.
	Step int `json:"step,omitempty"`
	// Attempt is the attempt number the resume will use for a retried model
	// call or a replayed action.
	Attempt int `json:"attempt,omitempty"`
	// StopReason and FinalAnswer, for PlanWriteFinish, PlanStopUnknown and
	// PlanAlreadyFinished.
	StopReason  StopReason `json:"stop_reason,omitempty"`
	FinalAnswer string     `json:"final_answer,omitempty"`
	// ModelCallID is the model call the plan continues from (reparse,
	// replay); ActionID and Tool name the first action of unknown outcome
	// (the never_replay one, for PlanStopUnknown).
	ModelCallID string `json:"model_call_id,omitempty"`
	ActionID    string `json:"action_id,omitempty"`
	Tool        string `json:"tool,omitempty"`
	// Unknown lists every action of the open batch whose outcome is
	// unknown, in batch order; Pending every action waiting at a gate with
	// no answer.
	Unknown []string `json:"unknown,omitempty"`
	Pending []string `json:"pending,omitempty"`
	// Reconcile lists the actions a reconciler is asked about
	// (PlanReconcile); Rerun those a reconciler said did not happen, which
	// run again (PlanReplayAction).
	Reconcile []string `json:"reconcile,omitempty"`
	Rerun     []string `json:"rerun,omitempty"`
	// Idempotent: an action replayed is idempotent, and runs again with
	// its idempotency key (PlanReplayAction).
	Idempotent bool `json:"idempotent,omitempty"`
	// EnvSnapshot, for a run with an environment, is the durable snapshot
	// the resume starts the environment from: the one the replayed
	// action's intent names (PlanRestoreAndReplay), else the last the log
	// names. A lost environment is restored from it, never recreated
	// empty.
	EnvSnapshot EnvSnapshot `json:"env_snapshot,omitempty"`
	// Reason explains the plan in words, for people.
	Reason string `json:"reason"`
	// LastSeq is the seq of the last record of the log planned from.
	LastSeq int64 `json:"last_seq"`
}

// PlanResume checks a run log's structure and decides what Resume does with
// it. It is a pure function of the log: no I/O, no clock.
//
// For each execution (a model call or an action) it asks two questions: is
// its intent in the log, and is its result? Intent and result: done, skip.
// Neither: not started, run it. Intent without result: unknown — a model call
// is retried under a new intent (the orphan stays); an action is replayed if
// its intent's policy is replay_safe, otherwise the run finishes with
// resume_state_unknown. Result without intent: structurally impossible, the
// log is corrupt. The actions of a batch are each planned this way; one
// never_replay action of unknown outcome finishes the run.
//
// An empty log gives ErrRunNotFound. A log that breaks the structure (a gap
// in seq, records after RunFinished, steps out of order, a result without
// its intent, a record that fails its own invariants) gives a
// *CorruptLogError that names the record.
func PlanResume(log RunLog) (ResumePlan, error) {
	if len(log.Records) == 0 {
		return ResumePlan{}, fmt.Errorf("%w: %q", ErrRunNotFound, log.RunID)
	}
	st, err := foldLog(log)
	if err != nil {
		return ResumePlan{}, err
	}
	return st.plan(), nil
}

// plan describes what resuming from this state does.
func (st *logState) plan() ResumePlan {
	p := ResumePlan{LastSeq: st.next - 1, Step: st.step}
	if st.phase != phaseFinished {
		p.EnvSnapshot = st.envRef
	}
	if st.maintenancePending() {
		p.Action = PlanMaintain
		p.Reason = fmt.Sprintf("step %d's maintenance is not done; the maintainer runs again, reusing what the log records of it", st.step)
		return p
	}
	switch st.phase {
	case phaseFinished:
		p.Action, p.StopReason, p.FinalAnswer = PlanAlreadyFinished, st.fin.StopReason, st.fin.FinalAnswer
		p.Reason = "the run is finished"
	case phaseIdle:
		p.Action, p.Step = PlanStartStep, st.step+1
		p.Reason = fmt.Sprintf("the log ends between steps; step %d has not started", st.step+1)
	case phaseModelIntent:
		p.Action, p.Attempt, p.ModelCallID = PlanRetryModelCall, st.attempt+1, st.callID
		p.Reason = fmt.Sprintf("model call %s has an intent but no result; model calls are replayable, so a new call is made", st.callID)
	case phaseModelResult:
		p.Action, p.ModelCallID = PlanReparseReply, st.callID
		p.Reason = fmt.Sprintf("model call %s has a result but no action intent; the stored reply is parsed again", st.callID)
	case phaseModelFailed:
		p.Action, p.StopReason, p.ModelCallID = PlanWriteFinish, StopLLMError, st.callID
		p.Reason = fmt.Sprintf("model call %s failed; only run_finished is missing", st.callID)
	case phaseDecided:
		p.Action, p.StopReason, p.FinalAnswer = PlanWriteFinish, st.decided, st.answer
		p.Reason = fmt.Sprintf("step %d decided the run (%s); only run_finished is missing", st.step, st.decided)
	case phaseActing:
		st.planBatch(&p)
	}
	return p
}

// planBatch describes the resume of an open batch.
func (st *logState) planBatch(p *ResumePlan) {
	p.ModelCallID = st.callID
	var first, never, ask, restore *ActionIntent
	runnable, idempotent := false, false
	for _, a := range st.batch {
		switch {
		case a.gate != nil && !a.gate.answered():
			p.Pending = append(p.Pending, a.gate.request.ActionID)
			continue
		case a.settled == nil && !a.open():
			runnable = true // not started, or answered at its gate
		}
		if !a.open() {
			continue
		}
		p.Unknown = append(p.Unknown, a.intent.ActionID)
		switch {
		case a.askable():
			p.Reconcile = append(p.Reconcile, a.intent.ActionID)
			if ask == nil {
				ask = a.intent
			}
			continue
		case !a.replayable():
			if never == nil {
				never = a.intent
			}
			continue
		case a.reconciled != nil:
			p.Rerun = append(p.Rerun, a.intent.ActionID)
		case a.intent.policy() == ReplayIdempotent:
			idempotent = true
		}
		if first == nil {
			first = a.intent
		}
		if restore == nil && a.intent.policy() == RestoreAndReplay {
			restore = a.intent
		}
	}
	switch {
	case never != nil:
		p.Action, p.StopReason, p.ActionID, p.Tool = PlanStopUnknown, StopResumeStateUnknown, never.ActionID, never.Action.Tool
		p.Reason = fmt.Sprintf("action %s has an intent but no outcome; its policy is never_replay, so whether it happened is unknown", never.ActionID)
		if r := never.key(st.runID); st.batchReconciled(never) {
			p.Reason = fmt.Sprintf("action %s has an intent but no outcome; its reconciler could not tell whether it happened (key %s)", never.ActionID, r)
		}
	case ask != nil:
		p.Action, p.StopReason, p.ActionID, p.Tool = PlanReconcile, StopResumeStateUnknown, ask.ActionID, ask.Action.Tool
		p.Reason = fmt.Sprintf("%s of unknown outcome and never_replay: the executor's reconciler is asked whether %s happened (an outcome it reports is adopted, one that did not happen runs again with the same key); "+
			"without a reconciler, or if it cannot tell, the run finishes resume_state_unknown", strings.Join(p.Reconcile, ", "), pronoun(len(p.Reconcile)))
	case restore != nil:
		p.Action, p.Attempt, p.ActionID, p.Tool = PlanRestoreAndReplay, restore.Attempt+1, restore.ActionID, restore.Action.Tool
		p.EnvSnapshot = restore.EnvSnapshot
		p.Reason = fmt.Sprintf("action %s has an intent but no outcome; its policy is restore_and_replay (it acts only inside the run's environment, which has no network), so the environment is restored to %s, the snapshot its intent names, and it runs again",
			restore.ActionID, restore.EnvSnapshot.Short())
	case first != nil:
		p.Action, p.Attempt, p.ActionID, p.Tool = PlanReplayAction, first.Attempt+1, first.ActionID, first.Action.Tool
		p.Idempotent = idempotent
		p.Reason = replayReason(p, idempotent)
	case len(p.Pending) > 0 && !runnable:
		p.Action = PlanAwaitGates
		p.Reason = fmt.Sprintf("%s wait for an answer (approval or delivery); a deadline that has passed is applied, otherwise the run stays suspended", strings.Join(p.Pending, ", "))
	default:
		p.Action = PlanContinueBatch
		p.Reason = fmt.Sprintf("step %d's batch has actions not yet settled and none of unknown outcome; the stored reply is parsed again and they go on", st.step)
	}
}

// batchReconciled reports whether the open action of intent in was
// answered for by a reconciler.
func (st *logState) batchReconciled(in *ActionIntent) bool {
	for _, a := range st.batch {
		if a.intent == in {
			return a.reconciled != nil
		}
	}
	return false
}

func pronoun(n int) string {
	if n == 1 {
		return "it"
	}
	return "each"
}

// replayReason explains a replay: by policy, or after a reconciler said the
// action did not happen.
func replayReason(p *ResumePlan, idempotent bool) string {
	var why string
	switch {
	case len(p.Rerun) > 0:
		why = fmt.Sprintf("; the reconciler answered that %s did not happen", strings.Join(p.Rerun, ", "))
	case idempotent:
		why = "; idempotent actions run again with the same idempotency key"
	}
	if len(p.Unknown) == 1 {
		if why == "" {
			return fmt.Sprintf("action %s has an intent but no outcome; its policy is replay_safe, so it runs again", p.ActionID)
		}
		return fmt.Sprintf("action %s has an intent but no outcome%s, so it runs again", p.ActionID, why)
	}
	if why == "" {
		why = "; their policy is replay_safe"
	}
	return fmt.Sprintf("actions %s have intents but no outcome%s, so they run again", strings.Join(p.Unknown, ", "), why)
}
