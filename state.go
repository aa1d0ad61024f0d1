package polyloop

import (
	"slices"
)

// phase is where a run stands after the last record of its log. It is the
// one description of "where the run stands": the resume plan, the step
// machine and the grammar all read it.
type phase int

const (
	phaseStart       phase = iota // no record yet
	phaseIdle                     // between steps (after run_started or a step record)
	phaseModelIntent              // a model-call intent without its result
	phaseModelResult              // a successful model result, no action intent yet
	phaseModelFailed              // a failed model result: only run_finished may follow
	phaseActing                   // a batch of actions is open: some intents, its step record missing
	phaseDecided                  // a step record that decided the run: only run_finished may follow
	phaseFinished                 // run_finished
)

// logState is the fold of a run log: every record, read back or about to be
// written, goes through apply, which checks it against the log's grammar
// (docs/log-format.md) and updates what the run is: where it stands, its
// totals, the history the model sees, the snapshot in force, the receptions
// of the open step and the next seq. PlanResume, History, ComputeTotals and
// the running loop all use this one fold.
type logState struct {
	runID   string
	next    int64 // the seq the next record must carry
	phase   phase
	started *RunStarted
	// refsToolCalls: the run's action intents refer to their tool calls
	// (started with log format 1.2 or later; see refersToToolCalls).
	refsToolCalls bool
	// keyed: its action intents carry their idempotency key (1.3 or later).
	keyed bool

	snap  Snapshot
	hash  string
	tools map[string]ToolSpec
	synth SyntheticObservations
	// deadlines: a tool of the snapshot in force has a gate's deadline.
	deadlines bool
	// clocked: the snapshot in force has a time limit (Limits.clocked).
	clocked bool
	// clock is when the run started and how long its calls and actions
	// took (state_clock.go).
	clock runClock

	// The open step: its number, the model call it stands on and, once
	// the model answered, the reply and the batch of actions.
	step    int
	attempt int // attempt of the last model-call intent of the step
	callID  string
	reply   *ModelReply
	batch   []batchAction

	// envRef is the last snapshot of the run's environment the log names
	// (an intent's, the state before its action; a settlement's, the state
	// after it): the durable state a resume restores.
	envRef EnvSnapshot

	decided StopReason // when phase is phaseDecided
	answer  string
	fin     *RunFinished

	// receptions are the child receptions of the open step, by child run
	// id: a replayed action meets its children's receptions again.
	receptions map[string]*ChildReception

	// copiedUntil is, in a fork, the seq of the last record copied from
	// the source: the copies count in the source's totals, not the fork's;
	// copying is set while one of them is folded.
	copiedUntil int64
	copying     bool
	// under are the configurations of a fork's copies still to come into
	// force (RunSource.CopiedUnder), each from its record on.
	under []CopiedConfig

	totals totalsAcc
	// copied folds the records a fork copied from its source: they count
	// in the source's totals, and in the fork's budgets.
	copied totalsAcc
	hist   historyBuilder
	// lastStepOnly: the fold keeps of the history only the last completed
	// step's messages (what its maintenance reads), not the whole
	// conversation — for folds that only read the log (ObserveLog,
	// ComputeTotals, RunLog.Snapshot, Steps), so that their memory does
	// not grow with the run's length. History and the Runner never set it.
	lastStepOnly bool
	maint        maintState // the last completed step's maintenance (state_memory.go)

	// onStep, when set, is told of each completed step before the state
	// moves past it (Steps).
	onStep func(sc *StepCompleted, reply *ModelReply, batch []batchAction)
	// obs, when set, is told of each record folded, and fact is the place
	// of the record being folded (ObserveLog, state_observe.go).
	obs  LogObserver
	fact Fact
}

// batchAction is one action of the open batch, by its index.
type batchAction struct {
	intent  *ActionIntent  // the latest intent, nil until the action starts
	settled *SettledAction // nil until its outcome is recorded
	gate    *gateState     // nil unless the action waits at a gate
	// reconciled is the reconciliation of its latest intent, or nil.
	reconciled *ActionReconciled
}

// open reports whether the action has started and has no outcome yet.
func (a batchAction) open() bool { return a.intent != nil && a.settled == nil }

// settleable reports whether an outcome may be recorded for the action: it
// started, or its gate answered it without running it (a denial, a
// delivery).
func (a batchAction) settleable() bool {
	if a.settled != nil {
		return false
	}
	if a.intent != nil {
		return true
	}
	g := a.gate
	return g != nil && (g.delivered != nil || (g.decided != nil && !g.decided.Allow))
}

// id is the action's id, from its intent or its gate request.
func (a batchAction) id() string {
	switch {
	case a.intent != nil:
		return a.intent.ActionID
	case a.gate != nil:
		return a.gate.request.ActionID
	}
	return ""
}

// action is the action, from its intent or its gate request.
func (a batchAction) action() Action {
	if a.intent != nil {
		return a.intent.Action
	}
	return a.gate.request.Action
}

// foldLog folds a whole log. A record that breaks the grammar gives a
// *CorruptLogError naming it.
func foldLog(log RunLog) (*logState, error) {
	st := &logState{runID: log.RunID}
	for i := range log.Records {
		if err := st.apply(log.Records[i]); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// foldPrefix folds a log up to its first record the grammar refuses: the
// state of what a corrupt log holds before the break.
func foldPrefix(log RunLog) *logState {
	return foldPrefixOf(&logState{runID: log.RunID}, log)
}

// foldPrefixWithoutHistory is foldPrefix for the readers that do not read
// the history (lastStepOnly).
func foldPrefixWithoutHistory(log RunLog) *logState {
	return foldPrefixOf(&logState{runID: log.RunID, lastStepOnly: true}, log)
}

// foldPrefixOf folds log into st up to its first record the grammar
// refuses.
func foldPrefixOf(st *logState, log RunLog) *logState {
	for i := range log.Records {
		if st.apply(log.Records[i]) != nil {
			break
		}
	}
	return st
}

// apply folds one record into the state, or says how it breaks the log's
// grammar; the state is unchanged by a record it refuses.
func (st *logState) apply(r Record) error {
	if r.Seq != st.next {
		return st.corrupt(r, "seq is %d, expected %d (gap or reordering)", r.Seq, st.next)
	}
	if r.Body == nil {
		return st.corrupt(r, "record has no body")
	}
	if err := r.Body.Validate(); err != nil {
		return st.corrupt(r, "%v", err)
	}
	if in, ok := r.Body.(*ActionIntent); ok && in.ToolCall > 0 {
		body, err := st.resolveToolCall(r, in)
		if err != nil {
			return err
		}
		r.Body = body
	}
	if err := st.check(r); err != nil {
		return err
	}
	var o observed
	if st.obs != nil {
		o = st.beforeFold(r)
	}
	st.copying = r.Seq > 0 && r.Seq <= st.copiedUntil
	if len(st.under) > 0 && st.under[0].From == r.Seq {
		if st.phase != phaseIdle {
			return st.corrupt(r, "forked_from.copied_under: a configuration comes into force in the middle of step %d", st.step)
		}
		st.setSnapshot(st.under[0].Snapshot, st.under[0].SnapshotHash)
		st.hist.setSystem(st.under[0].Snapshot.System)
		st.under = st.under[1:]
	}
	st.clockFold(r)
	st.fold(r.Body)
	st.next++
	if st.obs != nil {
		st.describe(r, o)
	}
	if r.Seq == st.copiedUntil && r.Seq > 0 {
		return st.endCopies(r)
	}
	return nil
}

// endCopies puts the fork's own snapshot in force after the records copied
// from its source, which must end at a step boundary.
func (st *logState) endCopies(r Record) error {
	if st.phase != phaseIdle && st.phase != phaseDecided {
		return st.corrupt(r, "the records copied from the fork's source end in the middle of step %d", st.step)
	}
	st.setSnapshot(st.started.Snapshot, st.started.SnapshotHash)
	st.hist.setSystem(st.started.Snapshot.System)
	return nil
}

// settles finds the action a settlement names, among those that may be
// settled.
func (st *logState) settles(s *SettledAction) (int, bool) {
	for i, a := range st.batch {
		if a.settleable() && a.id() == s.ResultID {
			return i, true
		}
	}
	return 0, false
}

// unsettled counts the actions of the batch without an outcome.
func (st *logState) unsettled() int {
	n := 0
	for _, a := range st.batch {
		if a.settled == nil {
			n++
		}
	}
	return n
}

// fold updates the state with a record the grammar accepted; a record
// copied from a fork's source counts in the source's totals only, and in
// the fork's budgets (copied).
func (st *logState) fold(body RecordBody) {
	if !st.copying {
		st.totals.add(body)
	} else {
		st.copied.add(body)
		if _, ok := body.(*StepCompleted); ok {
			st.totals.t.CopiedSteps++
		}
	}
	switch b := body.(type) {
	case *RunStarted:
		st.started, st.phase = b, phaseIdle
		st.refsToolCalls = atLeastMinor(b.LogVersion, 2)
		st.keyed = atLeastMinor(b.LogVersion, 3)
		snap, hash := b.Snapshot, b.SnapshotHash
		if f := b.ForkedFrom; f != nil {
			st.copiedUntil = int64(f.Copied)
			// The copies run under what the source's steps ran under
			// (log format 1.3 on); endCopies puts the fork's own
			// snapshot in force after them.
			if f.Copied > 0 && len(f.CopiedUnder) > 0 {
				snap, hash = f.CopiedUnder[0].Snapshot, f.CopiedUnder[0].SnapshotHash
				st.under = f.CopiedUnder[1:]
			}
		}
		st.setSnapshot(snap, hash)
		st.hist.start(snap)
	case *ConfigOverride:
		st.setSnapshot(b.Snapshot, b.SnapshotHash)
		st.hist.setSystem(b.Snapshot.System)
		st.overrideMaintenance()
	case *ModelCallIntent:
		st.phase, st.step, st.attempt, st.callID = phaseModelIntent, b.Step, b.Attempt, b.CallID
		st.reply, st.batch, st.receptions = nil, st.batch[:0], nil
		st.maint.view = b.View
	case *ModelCallResult:
		if b.Failure != nil {
			st.phase = phaseModelFailed
		} else {
			st.phase, st.reply = phaseModelResult, b.Reply
		}
	case *ActionIntent:
		st.openBatch(b.BatchSize())
		st.batch[b.Index].intent = b
		st.batch[b.Index].reconciled = nil
		if b.EnvSnapshot != "" {
			st.envRef = b.EnvSnapshot
		}
	case *ActionReconciled:
		st.foldReconciled(b)
	case *ApprovalRequested:
		st.openBatch(max(b.Of, 1))
		st.batch[b.Index].gate = &gateState{kind: KindApprovalRequested, request: &b.GateRequest}
	case *DeliveryRequested:
		st.openBatch(max(b.Of, 1))
		st.batch[b.Index].gate = &gateState{kind: KindDeliveryRequested, request: &b.GateRequest}
	case *ApprovalDecided:
		st.gateOf(b.ActionID).decided = b
	case *DeliveryReceived:
		st.gateOf(b.ActionID).delivered = b
	case *ActionResult:
		st.settle(&b.SettledAction)
	case *ChildReception:
		if st.receptions == nil {
			st.receptions = map[string]*ChildReception{}
		}
		st.receptions[b.ChildRunID] = b
		if b.Maintenance {
			st.foldMaintenance(b)
		}
	case *StepCompleted:
		st.completeStep(b)
	case *RunFinished:
		st.phase, st.fin = phaseFinished, b
	case *MaintenanceOp, *MaintenanceDone:
		st.foldMaintenance(b)
	}
}

// openBatch opens the batch of the step, of n actions, at its first intent
// or gate request.
func (st *logState) openBatch(n int) {
	if st.phase == phaseModelResult {
		st.phase, st.batch = phaseActing, slices.Grow(st.batch[:0], n)[:n]
		clear(st.batch)
	}
}

// settle records an action's outcome; one settled without an intent (a
// denial, a delivery) is not an execution of unknown outcome.
func (st *logState) settle(s *SettledAction) {
	i, _ := st.settles(s)
	if st.batch[i].intent == nil && !st.copying {
		st.totals.settledWithoutIntent++
	}
	st.batch[i].settled = s
	if s.EnvSnapshot != "" {
		st.envRef = s.EnvSnapshot
	}
}

func (st *logState) completeStep(b *StepCompleted) {
	if st.lastStepOnly {
		clear(st.hist.msgs)
		st.hist.msgs = st.hist.msgs[:0]
	}
	from := len(st.hist.msgs)
	if b.Outcome != nil {
		st.settle(&b.SettledAction)
	}
	st.hist.completeStep(st.reply, b, st.batch)
	if st.onStep != nil {
		st.onStep(b, st.reply, st.batch)
	}
	st.phase, st.decided, st.answer = phaseIdle, "", ""
	switch {
	case b.Decision == DecisionFinal:
		st.phase, st.decided, st.answer = phaseDecided, StopCompleted, b.Answer
	case b.Decision == DecisionAct:
		if reason := batchDecides(st.batch); reason != "" {
			st.phase, st.decided = phaseDecided, reason
		}
	}
	st.reply, st.batch, st.receptions = nil, st.batch[:0], nil
	st.beginMaintenance(b, from)
}

// batchDecides is what a complete batch decides: env_error if any action
// met a broken environment; completed if any executed action signalled Done;
// otherwise nothing, and the run goes on.
func batchDecides(batch []batchAction) StopReason {
	done := false
	for _, a := range batch {
		o := a.settled.Outcome
		switch {
		case o.Status == EnvError:
			return StopEnvError
		case o.Status == Executed && o.Done:
			done = true
		}
	}
	if done {
		return StopCompleted
	}
	return ""
}

func (st *logState) setSnapshot(snap Snapshot, hash string) {
	st.snap, st.hash = snap, hash
	st.tools = make(map[string]ToolSpec, len(snap.Tools))
	st.deadlines, st.clocked = false, snap.Limits.clocked()
	for _, t := range snap.Tools {
		st.tools[t.Name] = t
		st.deadlines = st.deadlines || t.Deadline > 0
	}
	st.synth = snap.Synthetic.withDefaults()
}

// envBroken reports whether an action of the open batch was settled
// env_error.
func (st *logState) envBroken() bool {
	for _, a := range st.batch {
		if a.settled != nil && a.settled.Outcome != nil && a.settled.Outcome.Status == EnvError {
			return true
		}
	}
	return false
}

// replyCalls are the tool calls of the open step's reply, or none.
func (st *logState) replyCalls() []ToolCall {
	if st.reply == nil {
		return nil
	}
	return st.reply.ToolCalls
}

// policy is the replay policy of an action under the snapshot in force:
// from the tool spec; an unknown tool is never replayed; a code action has
// codePolicy.
func (st *logState) policy(a Action) ReplayPolicy {
	if a.IsCode() {
		return codePolicy(st.snap.Environment)
	}
	if t, ok := st.tools[a.Tool]; ok {
		return t.Replay.normalize()
	}
	return NeverReplay
}

// codePolicy is the replay policy of a code action, the one place of the
// rule: a code action of a run with an environment runs inside it (Agent.
// Environment runs the agent's actions there, its state durable before
// each), so in an environment without network it is restore_and_replay —
// its effects cannot have left it, and the intent names the snapshot from
// before them — and never_replay otherwise (design 0054).
func codePolicy(env *EnvDescription) ReplayPolicy {
	if env != nil && env.Network.Normalize() == NetworkNone {
		return RestoreAndReplay
	}
	return NeverReplay
}

// policy is the replay policy an intent was written with. A code action's
// is restore_and_replay when written so (codePolicy), never_replay
// whatever else it says.
func (a *ActionIntent) policy() ReplayPolicy {
	if a.Action.IsCode() && a.Replay != RestoreAndReplay {
		return NeverReplay
	}
	return a.Replay.normalize()
}
