package polyloop

// recordEvents returns the events that reflect one durable record of run
// runID, whose agent is agent. audit is the executor's own outcome for a
// record that settles an action in this invocation (nil when the record was
// read back): action_finished carries it, the audit channel. It is a pure
// function of its arguments.
func recordEvents(runID, agent string, r Record, audit *ActionOutcome) []Event {
	ev := Event{V: EventVersion, RunID: runID, Agent: agent, Seq: r.Seq, At: r.At}
	switch b := r.Body.(type) {
	case *RunStarted:
		ev.Kind, ev.Snapshot, ev.SnapshotHash = EventRunStarted, &b.Snapshot, b.SnapshotHash
	case *ModelCallIntent:
		ev.Step, ev.CallID, ev.Attempt, ev.View = b.Step, b.CallID, b.Attempt, b.View
		ev.Kind = EventModelCallStarted
		first := ev
		if b.Attempt == 1 {
			first.Kind = EventStepStarted
		} else {
			// The call is made again: the earlier attempt was left of
			// unknown outcome, and whatever it previewed is dropped.
			first.Kind, first.Attempt, first.CallID = EventCandidateSuperseded, b.Attempt-1, modelCallID(b.Step, b.Attempt-1)
		}
		return []Event{first, ev}
	case *ModelCallResult:
		ev.Kind, ev.Step, ev.CallID, ev.Attempt, ev.Reply, ev.Failure = EventModelCallFinished, b.Step, b.CallID, b.Attempt, b.Reply, b.Failure
		ev.Usage = b.Usage
	case *ActionIntent:
		ev.Kind, ev.Step, ev.CallID, ev.Attempt = EventActionStarted, b.Step, b.ModelCallID, b.Attempt
		ev.ActionID, ev.Action, ev.Replay, ev.Index = b.ActionID, &b.Action, b.Replay, b.Index
	case *ActionResult:
		ev.Kind, ev.Step, ev.ActionID, ev.Attempt = EventActionFinished, b.Step, b.ResultID, b.Attempt
		ev.Outcome, ev.ActionResult = auditOutcome(&b.SettledAction, audit), b
	case *StepCompleted:
		ev.Step, ev.CallID, ev.StepRecord = b.Step, b.ModelCallID, b
		ev.Kind = EventStepCompleted
		if b.Outcome != nil {
			fin := ev
			fin.Kind, fin.ActionID, fin.Attempt, fin.Outcome = EventActionFinished, b.ResultID, b.Attempt, auditOutcome(&b.SettledAction, audit)
			return []Event{fin, ev}
		}
	case *RunFinished:
		ev.Kind, ev.StopReason, ev.FinalAnswer, ev.Totals = EventRunFinished, b.StopReason, b.FinalAnswer, &b.Totals
	case *ConfigOverride:
		ev.Kind, ev.Override, ev.SnapshotHash = EventConfigOverridden, b, b.SnapshotHash
	case *ChildReception:
		ev.Kind, ev.Step, ev.Reception = EventChildReceived, b.Step, b
	case *LeaseTakeover:
		ev.Kind, ev.Takeover = EventLeaseTakenOver, b
	case *ApprovalRequested:
		ev.Kind, ev.Step, ev.ActionID, ev.Gate, ev.GateRequest = EventGateRequested, b.Step, b.ActionID, KindApprovalRequested, &b.GateRequest
	case *DeliveryRequested:
		ev.Kind, ev.Step, ev.ActionID, ev.Gate, ev.GateRequest = EventGateRequested, b.Step, b.ActionID, KindDeliveryRequested, &b.GateRequest
	case *ApprovalDecided:
		ev.Kind, ev.Step, ev.ActionID, ev.Gate, ev.Answer = EventGateAnswered, b.Step, b.ActionID, KindApprovalRequested, b
	case *DeliveryReceived:
		ev.Kind, ev.Step, ev.ActionID, ev.Gate, ev.Answer = EventGateAnswered, b.Step, b.ActionID, KindDeliveryRequested, b
	case *MaintenanceOp:
		ev.Kind, ev.Step, ev.Operation = EventMaintenanceOp, b.Step, b
	case *MaintenanceDone:
		ev.Kind, ev.Step = EventMaintenanceDone, b.Step
	case *ActionReconciled:
		ev.Kind, ev.Step, ev.ActionID, ev.Attempt, ev.Reconciled = EventActionReconciled, b.Step, b.ActionID, b.Attempt, b
	default:
		return nil
	}
	return []Event{ev}
}

// copiedStepEvent is the one event of a step a fork copied from its
// source: its step record, marked as a copy.
func copiedStepEvent(runID, agent string, r Record, sc *StepCompleted) Event {
	return Event{V: EventVersion, Kind: EventStepCopied, RunID: runID, Agent: agent, Seq: r.Seq, At: r.At,
		Step: sc.Step, CallID: sc.ModelCallID, StepRecord: sc}
}

// auditOutcome is the executor's own outcome of a settled action: the one it
// returned in this invocation, or, for a record read back, the outcome as
// the log keeps it (the executor's text from the audit field, or the
// observation as entered in the history).
func auditOutcome(s *SettledAction, audit *ActionOutcome) *ActionOutcome {
	if audit != nil {
		return audit
	}
	o := &ActionOutcome{Status: s.Outcome.Status, Done: s.Outcome.Done, TruncatedChars: s.Outcome.ExecutorTruncated, Observation: s.Observation}
	if s.Synthetic {
		o.Observation = s.Audit
	}
	return o
}
