package polyloop

import (
	"fmt"
	"time"
)

// LogObserver is told, record by record, what a run's log holds as the
// log's one fold reads it (ObserveLog): each record's place in the run and
// what it is to the run — which action a settlement settles, which attempt
// an intent replays, which snapshot an override replaces, where an
// invocation began — so that tools that show a log (the trajectory behind
// polyloop show and view) project it instead of reading the records
// again. Record is called for every record, before the method of its
// kind.
type LogObserver interface {
	Record(f Fact, r Record)
	RunStarted(f Fact, b *RunStarted)
	ModelCall(f Fact, b *ModelCallIntent)
	ModelResult(f Fact, b *ModelCallResult)
	// ActionStarted: replaced is the intent of unknown outcome of the same
	// action this attempt replays, or nil.
	ActionStarted(f Fact, b *ActionIntent, replaced *ActionIntent)
	// ActionSettled: an action_result, or the settlement a step record
	// carries (told before StepCompleted). intent is the attempt it
	// settles, nil for an action its gate settled (a denial, a delivery),
	// whose gate request is gate.
	ActionSettled(f Fact, s *SettledAction, intent *ActionIntent, gate *GateRequest)
	StepCompleted(f Fact, b *StepCompleted)
	// GateRequested: kind is KindApprovalRequested or KindDeliveryRequested.
	GateRequested(f Fact, kind RecordKind, g *GateRequest)
	ApprovalDecided(f Fact, b *ApprovalDecided)
	DeliveryReceived(f Fact, b *DeliveryReceived)
	// ChildReceived: an action's child, or a step's maintenance's
	// (ChildReception.Maintenance).
	ChildReceived(f Fact, b *ChildReception)
	MaintenanceOp(f Fact, b *MaintenanceOp)
	MaintenanceDone(f Fact, b *MaintenanceDone)
	// ConfigOverridden: before is the snapshot in force before it.
	ConfigOverridden(f Fact, b *ConfigOverride, before Snapshot)
	LeaseTakenOver(f Fact, b *LeaseTakeover)
	// ActionReconciled: a reconciler's answer about an action of unknown
	// outcome (the settlement of an adopted outcome follows).
	ActionReconciled(f Fact, b *ActionReconciled)
	RunFinished(f Fact, b *RunFinished)
}

// Fact is a record's place in its run, as the fold reads it.
type Fact struct {
	Seq int64
	At  time.Time
	// Step is the step the record belongs to: the open step, or the last
	// completed one for its maintenance and for records between steps (0
	// before the first).
	Step int
	// Copied marks, in a fork, a copy of its source's record.
	Copied bool
	// Invocation is set on the first record of a write that only a new
	// invocation begins (see writeStarts; the Runner stamps the records of
	// one Append with one time, and a log's writes are read from its
	// times): how that invocation began, in words — the run's start, a
	// resume and its evidence, a gate's answer. Empty on every other
	// record.
	Invocation string
}

// ObserveLog folds a log and tells o what each record is, in order. It
// stops at the first record the log's grammar refuses, and returns that
// *CorruptLogError: o has then seen what the log holds before the break.
func ObserveLog(log RunLog, o LogObserver) error {
	end, _ := ObserveStream(log.Stream(), o) // a log read: no read fails
	return end.Break
}

// ObservedLog is what ObserveStream says of a whole log after telling its
// observer every record: what the readers that show a log (the trajectory)
// would otherwise fold the log again for.
type ObservedLog struct {
	// Records is the number of records read, and LastAt the last one's
	// time (those after a break included).
	Records int
	LastAt  time.Time
	// Break is the *CorruptLogError of the first record the log's grammar
	// refuses (the observer saw the records before it), nil when it
	// accepts the whole log.
	Break error
	// Totals are ComputeTotals', as far as the break.
	Totals Totals
	// Plan is PlanResume's, and Awaiting PendingGates', for a log with
	// records and without a break.
	Plan     *ResumePlan
	Awaiting *Suspension
	// Snapshot and SnapshotHash are those in force at the end of the log
	// (or at the break): RunLog.Snapshot's.
	Snapshot     Snapshot
	SnapshotHash string
	// Finished is the log's last record when it is a run_finished:
	// RunLog.Finished's.
	Finished *RunFinished
}

// ObserveStream is ObserveLog over a stream: it folds the log as it reads
// it, one chunk of rows at a time, and tells o what each record is, in
// order — holding what the fold holds (no history: lastStepOnly), never
// the log. After a break of the grammar it reads on to the end without
// folding (the records are still checked as they are read). The error is
// the stream's (Err): the store's, or a row that does not read.
func ObserveStream(s *LogStream, o LogObserver) (ObservedLog, error) {
	ob := newObserving(s.RunID(), o)
	for s.Next() {
		ob.add(s.Record())
	}
	if err := s.Err(); err != nil {
		return ObservedLog{}, err
	}
	return ob.result(), nil
}

// observing is the fold of a log read a record at a time, for an observer
// (or none), and what ObservedLog says of the records so far.
type observing struct {
	st   *logState
	end  ObservedLog
	prev Record
}

func newObserving(runID string, o LogObserver) *observing {
	return &observing{st: &logState{runID: runID, obs: o, lastStepOnly: true}} // observers read records, not the history
}

// add folds the log's next record, unless the grammar refused one before.
func (ob *observing) add(r Record) {
	end := &ob.end
	if end.Break == nil {
		if ob.st.obs != nil {
			var p *Record
			if end.Records > 0 {
				p = &ob.prev
			}
			ob.st.fact = Fact{Seq: r.Seq, At: r.At, Invocation: invocationAt(p, r)}
		}
		end.Break = ob.st.apply(r)
	}
	end.Records++
	end.LastAt = r.At
	end.Finished, _ = r.Body.(*RunFinished)
	ob.prev = r
}

// result is what the fold says of the records added.
func (ob *observing) result() ObservedLog {
	end, st := ob.end, ob.st
	end.Totals = st.totals.totals()
	end.Snapshot, end.SnapshotHash = st.snap, st.hash
	if end.Break == nil && end.Records > 0 {
		plan := st.plan()
		end.Plan, end.Awaiting = &plan, st.suspension()
	}
	return end
}

// invocationAt says how an invocation began with r, when r begins a write
// (its time differs from the record before it) that no invocation that
// has not stopped begins; "" otherwise.
func invocationAt(prev *Record, r Record) string {
	if prev == nil {
		return invocationEvidence(nil, r.Body)
	}
	if r.At.Equal(prev.At) || continuesWrite(prev.Body, r.Body) {
		return ""
	}
	return invocationEvidence(prev.Body, r.Body)
}

// observed is what the fold keeps of a record before folding it, for its
// observer.
type observed struct {
	replaced *ActionIntent // the attempt an action intent replays
	settles  batchAction   // the action a settlement settles
	before   Snapshot      // the snapshot in force before an override
}

// beforeFold notes what describe needs of the state before r is folded.
func (st *logState) beforeFold(r Record) observed {
	var o observed
	switch b := r.Body.(type) {
	case *ActionIntent:
		if b.Index < len(st.batch) && st.batch[b.Index].open() {
			o.replaced = st.batch[b.Index].intent
		}
	case *ActionResult:
		o.settles = st.settled(&b.SettledAction)
	case *StepCompleted:
		if b.Outcome != nil {
			o.settles = st.settled(&b.SettledAction)
		}
	case *ConfigOverride:
		o.before = st.snap
	}
	return o
}

// settled is the action of the open batch a settlement names.
func (st *logState) settled(s *SettledAction) batchAction {
	if i, ok := st.settles(s); ok {
		return st.batch[i]
	}
	return batchAction{}
}

// describe tells the observer what a folded record is.
func (st *logState) describe(r Record, o observed) {
	f := st.fact
	f.Seq, f.At, f.Step, f.Copied = r.Seq, r.At, st.step, st.copying
	obs := st.obs
	obs.Record(f, r)
	switch b := r.Body.(type) {
	case *RunStarted:
		obs.RunStarted(f, b)
	case *ModelCallIntent:
		obs.ModelCall(f, b)
	case *ModelCallResult:
		obs.ModelResult(f, b)
	case *ActionIntent:
		obs.ActionStarted(f, b, o.replaced)
	case *ActionResult:
		obs.ActionSettled(f, &b.SettledAction, o.settles.intent, o.settles.gateRequest())
	case *StepCompleted:
		if b.Outcome != nil {
			obs.ActionSettled(f, &b.SettledAction, o.settles.intent, o.settles.gateRequest())
		}
		obs.StepCompleted(f, b)
	case *ApprovalRequested:
		obs.GateRequested(f, KindApprovalRequested, &b.GateRequest)
	case *DeliveryRequested:
		obs.GateRequested(f, KindDeliveryRequested, &b.GateRequest)
	case *ApprovalDecided:
		obs.ApprovalDecided(f, b)
	case *DeliveryReceived:
		obs.DeliveryReceived(f, b)
	case *ChildReception:
		obs.ChildReceived(f, b)
	case *MaintenanceOp:
		obs.MaintenanceOp(f, b)
	case *MaintenanceDone:
		obs.MaintenanceDone(f, b)
	case *ConfigOverride:
		obs.ConfigOverridden(f, b, o.before)
	case *LeaseTakeover:
		obs.LeaseTakenOver(f, b)
	case *ActionReconciled:
		obs.ActionReconciled(f, b)
	case *RunFinished:
		obs.RunFinished(f, b)
	}
}

// gateRequest is the action's gate request, or nil.
func (a batchAction) gateRequest() *GateRequest {
	if a.gate == nil {
		return nil
	}
	return a.gate.request
}

// invocationEvidence says in words how an invocation began with a write
// starting with next, after a write that ended with prev (nil for the
// log's first).
func invocationEvidence(prev, next RecordBody) string {
	if s := answerEvidence(prev, next); s != "" {
		return s
	}
	switch b := next.(type) {
	case *RunStarted:
		return "run started"
	case *ModelCallIntent:
		if b.Attempt > 1 {
			return fmt.Sprintf("resume: model call %s retried (attempt %d; the earlier intent had no result)", b.CallID, b.Attempt)
		}
		return fmt.Sprintf("resume: step %d started after a log that ended between steps", b.Step)
	case *ActionIntent:
		if b.Attempt > 1 {
			return fmt.Sprintf("resume: action %s replayed (attempt %d; its outcome was unknown)", b.ActionID, b.Attempt)
		}
		return fmt.Sprintf("resume: the stored reply of step %d parsed again, action %s started", b.Step, b.ActionID)
	case *ConfigOverride:
		return fmt.Sprintf("resume with a changed configuration (config_override: %d fields)", len(b.Fields))
	case *LeaseTakeover:
		return fmt.Sprintf("resume on %s (pid %d), taking the run over from %s (pid %d): %s",
			b.To.Host, b.To.PID, b.From.Host, b.From.PID, b.Reason)
	case *RunFinished:
		return fmt.Sprintf("resume: wrote the finish the log already determined (%s)", b.StopReason)
	case *StepCompleted:
		return fmt.Sprintf("resume: step %d settled from its stored reply", b.Step)
	case *ActionReconciled:
		return fmt.Sprintf("resume: action %s of unknown outcome reconciled (%s: %s)", b.ActionID, b.Verdict, b.Resolution)
	}
	return fmt.Sprintf("resume: a write starting with %s after %s", next.Kind(), kindOf(prev))
}

// answerEvidence says how a write that answers a gate, or that follows an
// answer, begins an invocation: an answer is written by Runner.Approve or
// Runner.Deliver (polyloop approve, deliver), except a timeout, which a
// resume after the deadline applies; what follows an answer is a resume.
// "" for the other writes.
func answerEvidence(prev, next RecordBody) string {
	switch b := next.(type) {
	case *ApprovalDecided:
		if b.Timeout {
			return fmt.Sprintf("resume after the deadline: the approval of %s timed out (denied)", b.ActionID)
		}
		verb := "denied"
		if b.Allow {
			verb = "allowed"
		}
		return fmt.Sprintf("approve: %s %s by %s (an answer given apart from any run)", b.ActionID, verb, who(b.By))
	case *DeliveryReceived:
		if b.Timeout {
			return fmt.Sprintf("resume after the deadline: the delivery of %s timed out (env_error)", b.ActionID)
		}
		return fmt.Sprintf("deliver: %s delivered by %s, %s (an answer given apart from any run)", b.ActionID, who(b.By), b.Outcome.Status)
	}
	switch prev.(type) {
	case *ApprovalDecided, *DeliveryReceived:
		switch b := next.(type) {
		case *ActionIntent:
			return fmt.Sprintf("resume after the gates' answers: step %d goes on, action %s started", b.Step, b.ActionID)
		case *ActionResult:
			return fmt.Sprintf("resume after the gates' answers: step %d goes on, action %s settled at its gate", b.Step, b.ResultID)
		case *StepCompleted:
			return fmt.Sprintf("resume after the gates' answers: step %d settled", b.Step)
		}
	}
	return ""
}

func who(by string) string {
	if by == "" {
		return "someone unnamed"
	}
	return by
}

func kindOf(b RecordBody) RecordKind {
	if b == nil {
		return ""
	}
	return b.Kind()
}
