package polyloop

import "context"

// emitRecord emits the events that reflect one durable record.
func (d *driver) emitRecord(ctx context.Context, r Record) {
	ev := Event{V: EventVersion, RunID: d.runID, Agent: d.snap.Agent, Seq: r.Seq, At: r.At}
	switch b := r.Body.(type) {
	case *RunStarted:
		ev.Kind, ev.Snapshot, ev.SnapshotHash = EventRunStarted, &b.Snapshot, b.SnapshotHash
		d.sinks.emit(ctx, ev)
	case *ModelCallIntent:
		d.evModelAttempt = b.Attempt
		ev.Step, ev.CallID, ev.Attempt = b.Step, b.CallID, b.Attempt
		if b.Attempt == 1 {
			ev.Kind = EventStepStarted
			d.sinks.emit(ctx, ev)
		}
		ev.Kind = EventModelCallStarted
		d.sinks.emit(ctx, ev)
	case *ModelCallResult:
		ev.Kind, ev.Step, ev.CallID, ev.Reply, ev.Failure = EventModelCallFinished, b.Step, b.CallID, b.Reply, b.Failure
		ev.Attempt = d.evModelAttempt
		d.sinks.emit(ctx, ev)
	case *ActionIntent:
		d.evActionAttempt = b.Attempt
		ev.Kind, ev.Step, ev.CallID, ev.Attempt = EventActionStarted, b.Step, b.ModelCallID, b.Attempt
		ev.ActionID, ev.Action, ev.Replay = b.ActionID, &b.Action, b.Replay
		d.sinks.emit(ctx, ev)
	case *StepCompleted:
		ev.Step, ev.CallID, ev.StepRecord = b.Step, b.ModelCallID, b
		if b.Outcome != nil {
			ev.Kind, ev.ActionID, ev.Outcome, ev.Attempt = EventActionFinished, b.ResultID, d.outcome, d.evActionAttempt
			d.sinks.emit(ctx, ev)
			ev.Outcome, ev.Attempt = nil, 0
		}
		ev.Kind = EventStepCompleted
		d.sinks.emit(ctx, ev)
	case *RunFinished:
		ev.Kind, ev.StopReason, ev.FinalAnswer, ev.Totals = EventRunFinished, b.StopReason, b.FinalAnswer, &b.Totals
		d.sinks.emit(ctx, ev)
	case *ConfigOverride:
		ev.Kind, ev.Override, ev.SnapshotHash = EventConfigOverridden, b, b.SnapshotHash
		d.sinks.emit(ctx, ev)
	case *ChildReception:
		ev.Kind, ev.Step, ev.Reception = EventChildReceived, b.Step, b
		d.sinks.emit(ctx, ev)
	}
}
