package polyloop

import "fmt"

func (st *logState) corrupt(r Record, format string, args ...any) error {
	return &CorruptLogError{RunID: st.runID, Seq: st.next, Kind: r.Kind(), Reason: fmt.Sprintf(format, args...)}
}

// resolveToolCall returns the intent with the action it refers to, the
// tool call of the open step's reply: the intent itself when it holds the
// action, a copy with it when it leaves it out, as the log does.
func (st *logState) resolveToolCall(r Record, in *ActionIntent) (*ActionIntent, error) {
	if st.reply == nil || in.ModelCallID != st.callID || in.Step != st.step || in.ToolCall > len(st.reply.ToolCalls) {
		return nil, st.corrupt(r, "action_intent %q refers to tool call %d of a model result %q that does not have it", in.ActionID, in.ToolCall, in.ModelCallID)
	}
	call := st.reply.ToolCalls[in.ToolCall-1]
	if in.Action.empty() {
		c := *in
		c.Action = call.restored()
		return &c, nil
	}
	if !in.Action.Equal(call.action()) {
		return nil, st.corrupt(r, "action_intent %q is not tool call %d it refers to", in.ActionID, in.ToolCall)
	}
	return in, nil
}

// check applies the grammar: may this record follow the log so far?
func (st *logState) check(r Record) error {
	if st.phase == phaseFinished {
		return st.corrupt(r, "record after run_finished")
	}
	if st.phase == phaseStart {
		rs, ok := r.Body.(*RunStarted)
		if !ok {
			return st.corrupt(r, "first record is not run_started")
		}
		if st.runID != "" && rs.RunID != st.runID {
			return st.corrupt(r, "run_started names run %q", rs.RunID)
		}
		if f := rs.ForkedFrom; f != nil && (f.Copied < 0 || f.AtStep < 0 || (f.Copied == 0) != (f.AtStep == 0)) {
			return st.corrupt(r, "forked_from: %d records copied for step %d", f.Copied, f.AtStep)
		}
		return nil
	}
	if err := st.checkMaintenanceOrder(r); err != nil {
		return err
	}
	switch b := r.Body.(type) {
	case *RunStarted:
		return st.corrupt(r, "run_started after the first record")
	case *ConfigOverride, *LeaseTakeover:
		return nil // allowed anywhere before the end
	case *ModelCallIntent:
		return st.checkModelIntent(r, b)
	case *ModelCallResult:
		if st.phase != phaseModelIntent || b.Step != st.step || b.CallID != st.callID {
			return st.corrupt(r, "model_call_result %q of step %d without its intent", b.CallID, b.Step)
		}
		return nil
	case *ActionIntent:
		return st.checkActionIntent(r, b)
	case *ActionResult:
		return st.checkActionResult(r, b)
	case *ChildReception:
		if b.Maintenance {
			return st.checkMaintenance(r, b.Step, "")
		}
		if st.phase != phaseActing || b.Step != st.step || b.Action >= len(st.batch) || !st.batch[b.Action].open() {
			return st.corrupt(r, "child_reception outside the open action %d of step %d", b.Action, b.Step)
		}
		return nil
	case *ApprovalRequested:
		return st.checkGateRequest(r, &b.GateRequest)
	case *DeliveryRequested:
		return st.checkGateRequest(r, &b.GateRequest)
	case *ApprovalDecided:
		return st.checkGateAnswer(r, b.Step, b.ActionID, KindApprovalRequested)
	case *DeliveryReceived:
		return st.checkGateAnswer(r, b.Step, b.ActionID, KindDeliveryRequested)
	case *StepCompleted:
		return st.checkStepCompleted(r, b)
	case *RunFinished:
		return st.checkRunFinished(r, b)
	case *MaintenanceOp:
		return st.checkMaintenance(r, b.Step, b.Name)
	case *MaintenanceDone:
		return st.checkMaintenance(r, b.Step, "")
	}
	return st.corrupt(r, "unknown record kind")
}

func (st *logState) checkModelIntent(r Record, b *ModelCallIntent) error {
	switch {
	case st.phase == phaseIdle && b.Step == st.step+1 && b.Attempt == 1:
	case st.phase == phaseModelIntent && b.Step == st.step && b.Attempt > st.attempt:
		// a new attempt after an orphaned intent
	case st.phase == phaseIdle:
		return st.corrupt(r, "model_call_intent for step %d attempt %d after step %d (steps out of order)", b.Step, b.Attempt, st.step)
	default:
		return st.corrupt(r, "model_call_intent in the middle of step %d", st.step)
	}
	return nil
}

func (st *logState) checkActionIntent(r Record, b *ActionIntent) error {
	if b.Step != st.step || b.ModelCallID != st.callID {
		return st.corrupt(r, "action_intent %q of step %d without a model result it can come from", b.ActionID, b.Step)
	}
	switch st.phase {
	case phaseModelResult:
		if b.Attempt != 1 {
			return st.corrupt(r, "action_intent %q: first attempt is %d", b.ActionID, b.Attempt)
		}
		return nil
	case phaseActing:
	default:
		return st.corrupt(r, "action_intent %q of step %d without a model result it can come from", b.ActionID, b.Step)
	}
	if b.BatchSize() != len(st.batch) {
		return st.corrupt(r, "action_intent %q: batch of %d in a batch of %d", b.ActionID, b.BatchSize(), len(st.batch))
	}
	a := st.batch[b.Index]
	if g := a.gate; g != nil && (g.kind != KindApprovalRequested || g.decided == nil || !g.decided.Allow) {
		return st.corrupt(r, "action_intent %q of an action its gate does not let run", b.ActionID)
	}
	switch {
	case a.intent == nil:
		if b.Attempt != 1 {
			return st.corrupt(r, "action_intent %q: first attempt is %d", b.ActionID, b.Attempt)
		}
	case a.settled != nil:
		return st.corrupt(r, "action_intent %q after its outcome", b.ActionID)
	case b.ActionID != a.intent.ActionID || b.Attempt <= a.intent.Attempt || !b.Action.Equal(a.intent.Action):
		return st.corrupt(r, "action_intent %q does not replay action %q", b.ActionID, a.intent.ActionID)
	case !a.intent.policy().replayable():
		return st.corrupt(r, "replay of never_replay action %q", b.ActionID)
	}
	return st.checkIDFree(r, b.Index, b.ActionID)
}

// checkIDFree refuses an action id another action of the batch has.
func (st *logState) checkIDFree(r Record, index int, id string) error {
	for i, o := range st.batch {
		if i != index && o.id() == id {
			return st.corrupt(r, "action %q: the id is taken by action %d of the batch", id, i)
		}
	}
	return nil
}

func (st *logState) checkActionResult(r Record, b *ActionResult) error {
	if st.phase != phaseActing || b.Step != st.step {
		return st.corrupt(r, "action_result of step %d outside its batch", b.Step)
	}
	if _, ok := st.settles(&b.SettledAction); !ok {
		return st.corrupt(r, "action_result %q settles no open action", b.ResultID)
	}
	if st.unsettled() == 1 {
		return st.corrupt(r, "action_result %q settles the last action of the batch, which the step record settles", b.ResultID)
	}
	return nil
}

func (st *logState) checkStepCompleted(r Record, b *StepCompleted) error {
	if b.Step != st.step || b.ModelCallID != st.callID {
		return st.corrupt(r, "step_completed for step %d (model call %q) while step %d (model call %q) is open", b.Step, b.ModelCallID, st.step, st.callID)
	}
	switch st.phase {
	case phaseModelResult:
		if b.Outcome != nil {
			return st.corrupt(r, "step_completed with an action outcome but no action intent")
		}
	case phaseActing:
		if b.Outcome == nil {
			return st.corrupt(r, "step_completed settles no action of the batch")
		}
		if _, ok := st.settles(&b.SettledAction); !ok || st.unsettled() != 1 {
			return st.corrupt(r, "step_completed does not settle the last open action of the batch (it names %q)", b.ResultID)
		}
	default:
		return st.corrupt(r, "step_completed without a model result")
	}
	return nil
}

func (st *logState) checkRunFinished(r Record, b *RunFinished) error {
	want := StopReason("")
	switch st.phase {
	case phaseModelFailed:
		want = StopLLMError
	case phaseDecided:
		want = st.decided
	case phaseActing:
		want = StopResumeStateUnknown
	case phaseIdle:
		switch b.StopReason {
		case StopMaxSteps, StopTokenBudget, StopCostBudget:
		default:
			return st.corrupt(r, "stop reason %q between steps", b.StopReason)
		}
	default:
		return st.corrupt(r, "run_finished in the middle of step %d", st.step)
	}
	if want != "" && b.StopReason != want {
		return st.corrupt(r, "stop reason %q, but the log determines %q", b.StopReason, want)
	}
	return nil
}
