package polyloop

import "fmt"

// PlanResume checks a run log's structure and decides what Resume does with
// it. It is a pure function of the log: no I/O, no clock.
//
// For each execution (a model call or an action) it asks two questions: is
// its intent in the log, and is its result? Intent and result: done, skip.
// Neither: not started, run it. Intent without result: unknown — a model call
// is retried under a new intent (the orphan stays); an action is replayed if
// its intent's policy is replay_safe, otherwise the run finishes with
// resume_state_unknown. Result without intent: structurally impossible, the
// log is corrupt.
//
// An empty log gives ErrRunNotFound. A log that breaks the structure (a gap
// in seq, records after RunFinished, steps out of order, a result without
// its intent, a record that fails its own invariants) gives a
// *CorruptLogError that names the record.
func PlanResume(log RunLog) (ResumePlan, error) {
	if len(log.Records) == 0 {
		return ResumePlan{}, fmt.Errorf("%w: %q", ErrRunNotFound, log.RunID)
	}
	var w logWalker
	w.runID = log.RunID
	for i := range log.Records {
		if err := w.walk(int64(i), log.Records[i]); err != nil {
			return ResumePlan{}, err
		}
	}
	return w.plan(), nil
}

// phase is where a log stands after its last record.
type phase int

const (
	phaseStart       phase = iota // nothing yet
	phaseIdle                     // between steps
	phaseModelIntent              // a model call intent without result
	phaseModelResult              // a successful model result, no action intent yet
	phaseModelFailed              // a failed model result: only RunFinished may follow
	phaseAction                   // an action intent without step record
	phaseDecided                  // a step record that decided the run: only RunFinished may follow
	phaseFinished
)

type logWalker struct {
	runID   string
	phase   phase
	step    int
	attempt int // attempt of the open model intent or action intent
	callID  string
	reply   *ModelReply
	intent  *ActionIntent
	decided StopReason
	answer  string
	fin     *RunFinished
	last    int64
}

func (w *logWalker) corrupt(seq int64, r Record, format string, args ...any) error {
	return &CorruptLogError{RunID: w.runID, Seq: seq, Kind: r.Kind(), Reason: fmt.Sprintf(format, args...)}
}

func (w *logWalker) walk(i int64, r Record) error {
	w.last = i
	if r.Seq != i {
		return w.corrupt(i, r, "seq is %d, expected %d (gap or reordering)", r.Seq, i)
	}
	if r.Body == nil {
		return w.corrupt(i, r, "record has no body")
	}
	if err := r.Body.Validate(); err != nil {
		return w.corrupt(i, r, "%v", err)
	}
	if w.phase == phaseFinished {
		return w.corrupt(i, r, "record after run_finished")
	}
	if w.phase == phaseStart {
		rs, ok := r.Body.(*RunStarted)
		if !ok {
			return w.corrupt(i, r, "first record is not run_started")
		}
		if w.runID != "" && rs.RunID != w.runID {
			return w.corrupt(i, r, "run_started names run %q", rs.RunID)
		}
		w.phase = phaseIdle
		return nil
	}
	switch b := r.Body.(type) {
	case *RunStarted:
		return w.corrupt(i, r, "run_started after the first record")
	case *ConfigOverride, *LeaseTakeover:
		return nil // allowed anywhere before the end
	case *ModelCallIntent:
		return w.modelIntent(i, r, b)
	case *ModelCallResult:
		return w.modelResult(i, r, b)
	case *ActionIntent:
		return w.actionIntent(i, r, b)
	case *ChildReception:
		if w.phase != phaseAction || b.Step != w.step {
			return w.corrupt(i, r, "child_reception outside the action of step %d", b.Step)
		}
		return nil
	case *StepCompleted:
		return w.stepCompleted(i, r, b)
	case *RunFinished:
		return w.runFinished(i, r, b)
	}
	return w.corrupt(i, r, "unknown record kind")
}

func (w *logWalker) modelIntent(i int64, r Record, b *ModelCallIntent) error {
	switch {
	case w.phase == phaseIdle && b.Step == w.step+1 && b.Attempt == 1:
	case w.phase == phaseModelIntent && b.Step == w.step && b.Attempt > w.attempt:
		// a new attempt after an orphaned intent
	case w.phase == phaseIdle:
		return w.corrupt(i, r, "model_call_intent for step %d attempt %d after step %d (steps out of order)", b.Step, b.Attempt, w.step)
	default:
		return w.corrupt(i, r, "model_call_intent in the middle of step %d", w.step)
	}
	w.phase, w.step, w.attempt, w.callID = phaseModelIntent, b.Step, b.Attempt, b.CallID
	return nil
}

func (w *logWalker) modelResult(i int64, r Record, b *ModelCallResult) error {
	if w.phase != phaseModelIntent || b.Step != w.step || b.CallID != w.callID {
		return w.corrupt(i, r, "model_call_result %q of step %d without its intent", b.CallID, b.Step)
	}
	if b.Failure != nil {
		w.phase = phaseModelFailed
		return nil
	}
	w.phase, w.reply = phaseModelResult, b.Reply
	return nil
}

func (w *logWalker) actionIntent(i int64, r Record, b *ActionIntent) error {
	switch {
	case w.phase == phaseModelResult && b.Step == w.step && b.ModelCallID == w.callID && b.Attempt == 1:
	case w.phase == phaseAction && b.Step == w.step && b.ActionID == w.intent.ActionID &&
		b.Attempt > w.intent.Attempt && b.Action.Equal(w.intent.Action):
		// a replay of an action of unknown outcome
		if w.intent.policy() != ReplaySafe {
			return w.corrupt(i, r, "replay of never_replay action %q", b.ActionID)
		}
	default:
		return w.corrupt(i, r, "action_intent %q of step %d without a model result it can come from", b.ActionID, b.Step)
	}
	w.phase, w.intent = phaseAction, b
	return nil
}

func (w *logWalker) stepCompleted(i int64, r Record, b *StepCompleted) error {
	if b.Step != w.step || b.ModelCallID != w.callID {
		return w.corrupt(i, r, "step_completed for step %d (model call %q) while step %d (model call %q) is open", b.Step, b.ModelCallID, w.step, w.callID)
	}
	switch w.phase {
	case phaseModelResult:
		if b.Outcome != nil {
			return w.corrupt(i, r, "step_completed with an action outcome but no action intent")
		}
	case phaseAction:
		if b.Outcome == nil || b.ResultID != w.intent.ActionID {
			return w.corrupt(i, r, "step_completed does not settle action %q", w.intent.ActionID)
		}
	default:
		return w.corrupt(i, r, "step_completed without a model result")
	}
	w.phase, w.reply, w.intent = phaseIdle, nil, nil
	switch {
	case b.Decision == DecisionFinal:
		w.phase, w.decided, w.answer = phaseDecided, StopCompleted, b.Answer
	case b.Outcome != nil && b.Outcome.Status == EnvError:
		w.phase, w.decided = phaseDecided, StopEnvError
	case b.Outcome != nil && b.Outcome.Status == Executed && b.Outcome.Done:
		w.phase, w.decided = phaseDecided, StopCompleted
	}
	return nil
}

func (w *logWalker) runFinished(i int64, r Record, b *RunFinished) error {
	want := StopReason("")
	switch w.phase {
	case phaseModelFailed:
		want = StopLLMError
	case phaseDecided:
		want = w.decided
	case phaseAction:
		want = StopResumeStateUnknown
	case phaseIdle:
		switch b.StopReason {
		case StopMaxSteps, StopTokenBudget, StopCostBudget:
		default:
			return w.corrupt(i, r, "stop reason %q between steps", b.StopReason)
		}
	default:
		return w.corrupt(i, r, "run_finished in the middle of step %d", w.step)
	}
	if want != "" && b.StopReason != want {
		return w.corrupt(i, r, "stop reason %q, but the log determines %q", b.StopReason, want)
	}
	w.phase, w.fin = phaseFinished, b
	return nil
}

func (a *ActionIntent) policy() ReplayPolicy {
	if a.Action.IsCode() {
		return NeverReplay
	}
	return a.Replay.normalize()
}

func (w *logWalker) plan() ResumePlan {
	p := ResumePlan{LastSeq: w.last, Step: w.step}
	switch w.phase {
	case phaseFinished:
		p.Action, p.StopReason, p.FinalAnswer = PlanFinished, w.fin.StopReason, w.fin.FinalAnswer
		p.Reason = "the run is finished"
	case phaseIdle:
		p.Action, p.Step = PlanStartStep, w.step+1
		p.Reason = fmt.Sprintf("the log ends between steps; step %d has not started", w.step+1)
	case phaseModelIntent:
		p.Action, p.Attempt, p.ModelCallID = PlanRetryModelCall, w.attempt+1, w.callID
		p.Reason = fmt.Sprintf("model call %s has an intent but no result; model calls are replayable, so a new call is made", w.callID)
	case phaseModelResult:
		p.Action, p.ModelCallID, p.reply = PlanReparse, w.callID, w.reply
		p.Reason = fmt.Sprintf("model call %s has a result but no action intent; the stored reply is parsed again", w.callID)
	case phaseModelFailed:
		p.Action, p.StopReason, p.ModelCallID = PlanFinish, StopLLMError, w.callID
		p.Reason = fmt.Sprintf("model call %s failed; only run_finished is missing", w.callID)
	case phaseDecided:
		p.Action, p.StopReason, p.FinalAnswer = PlanFinish, w.decided, w.answer
		p.Reason = fmt.Sprintf("step %d decided the run (%s); only run_finished is missing", w.step, w.decided)
	case phaseAction:
		p.ActionID, p.Tool, p.ModelCallID, p.intent, p.reply = w.intent.ActionID, w.intent.Action.Tool, w.callID, w.intent, w.reply
		if w.intent.policy() == ReplaySafe {
			p.Action, p.Attempt = PlanReplayAction, w.intent.Attempt+1
			p.Reason = fmt.Sprintf("action %s has an intent but no step record; its policy is replay_safe, so it runs again", w.intent.ActionID)
		} else {
			p.Action, p.StopReason = PlanStopUnknown, StopResumeStateUnknown
			p.Reason = fmt.Sprintf("action %s has an intent but no step record; its policy is never_replay, so whether it happened is unknown", w.intent.ActionID)
		}
	}
	return p
}
