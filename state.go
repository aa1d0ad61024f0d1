package polyloop

import (
	"fmt"
	"slices"
	"time"
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

	snap  Snapshot
	hash  string
	tools map[string]ToolSpec
	synth SyntheticObservations

	// The open step: its number, the model call it stands on and, once
	// the model answered, the reply and the batch of actions.
	step    int
	attempt int // attempt of the last model-call intent of the step
	callID  string
	reply   *ModelReply
	batch   []batchAction

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

	totals totalsAcc
	// copied folds the records a fork copied from its source: they count
	// in the source's totals, and in the fork's budgets.
	copied totalsAcc
	hist   historyBuilder
	maint  maintState // the last completed step's maintenance (maintenance_state.go)

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
}

// gateState is an action's gate: its request and its answer.
type gateState struct {
	kind      RecordKind // KindApprovalRequested or KindDeliveryRequested
	request   *GateRequest
	decided   *ApprovalDecided
	delivered *DeliveryReceived
}

func (g *gateState) answered() bool { return g.decided != nil || g.delivered != nil }

// expired reports whether the gate's deadline has passed at now: at or
// after it, a resume records the timeout answer and no answer is taken.
func (g *gateState) expired(now time.Time) bool {
	d := g.request.Deadline
	return d != nil && !now.Before(*d)
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
	st := &logState{runID: log.RunID}
	for i := range log.Records {
		if st.apply(log.Records[i]) != nil {
			break
		}
	}
	return st
}

func (st *logState) corrupt(r Record, format string, args ...any) error {
	return &CorruptLogError{RunID: st.runID, Seq: st.next, Kind: r.Kind(), Reason: fmt.Sprintf(format, args...)}
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
	case a.intent.policy() != ReplaySafe:
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

func (st *logState) checkGateRequest(r Record, g *GateRequest) error {
	if g.Step != st.step || (st.phase != phaseModelResult && st.phase != phaseActing) {
		return st.corrupt(r, "%s %q of step %d without a model result it can come from", r.Kind(), g.ActionID, g.Step)
	}
	if st.phase == phaseModelResult {
		return nil
	}
	if max(g.Of, 1) != len(st.batch) {
		return st.corrupt(r, "%s %q: batch of %d in a batch of %d", r.Kind(), g.ActionID, max(g.Of, 1), len(st.batch))
	}
	if a := st.batch[g.Index]; a.intent != nil || a.gate != nil || a.settled != nil {
		return st.corrupt(r, "%s %q for an action already requested or started", r.Kind(), g.ActionID)
	}
	return st.checkIDFree(r, g.Index, g.ActionID)
}

func (st *logState) checkGateAnswer(r Record, step int, id string, kind RecordKind) error {
	if st.phase == phaseActing && step == st.step {
		for _, a := range st.batch {
			if a.gate != nil && a.gate.kind == kind && a.gate.request.ActionID == id && !a.gate.answered() {
				return nil
			}
		}
	}
	return st.corrupt(r, "%s for %q, which waits for no such answer", r.Kind(), id)
}

// gateFor finds the action waiting at a gate of the given kind, by action id
// or tool-call id.
func (st *logState) gateFor(action string, kind RecordKind) (*gateState, error) {
	for _, a := range st.batch {
		g := a.gate
		if g == nil || g.kind != kind || (g.request.ActionID != action && (action == "" || g.request.Action.CallID != action)) {
			continue
		}
		if g.answered() {
			return nil, fmt.Errorf("%w: %s", ErrAlreadyAnswered, g.request.ActionID)
		}
		return g, nil
	}
	return nil, fmt.Errorf("%w: %q (%s)", ErrNoPendingGate, action, kind)
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
		st.setSnapshot(b.Snapshot, b.SnapshotHash)
		st.hist.start(b.Snapshot)
		if b.ForkedFrom != nil {
			st.copiedUntil = int64(b.ForkedFrom.Copied)
		}
	case *ConfigOverride:
		st.setSnapshot(b.Snapshot, b.SnapshotHash)
		st.hist.setSystem(b.Snapshot.System)
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

func (st *logState) gateOf(id string) *gateState {
	for _, a := range st.batch {
		if a.gate != nil && a.gate.request.ActionID == id {
			return a.gate
		}
	}
	return nil // the grammar checked that it exists
}

// settle records an action's outcome; one settled without an intent (a
// denial, a delivery) is not an execution of unknown outcome.
func (st *logState) settle(s *SettledAction) {
	i, _ := st.settles(s)
	if st.batch[i].intent == nil && !st.copying {
		st.totals.settledWithoutIntent++
	}
	st.batch[i].settled = s
}

func (st *logState) completeStep(b *StepCompleted) {
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
	for _, t := range snap.Tools {
		st.tools[t.Name] = t
	}
	st.synth = snap.Synthetic.withDefaults()
}

// policy is the replay policy of an action under the snapshot in force:
// from the tool spec; a code action or an unknown tool is never replayed.
func (st *logState) policy(a Action) ReplayPolicy {
	if a.IsCode() {
		return NeverReplay
	}
	if t, ok := st.tools[a.Tool]; ok {
		return t.Replay.normalize()
	}
	return NeverReplay
}

// policy is the replay policy an intent was written with.
func (a *ActionIntent) policy() ReplayPolicy {
	if a.Action.IsCode() {
		return NeverReplay
	}
	return a.Replay.normalize()
}

// suspension lists the gates of the open batch that have no answer yet.
func (st *logState) suspension() *Suspension {
	s := &Suspension{}
	for _, a := range st.batch {
		g := a.gate
		if g == nil || g.answered() {
			continue
		}
		p := PendingGate{Step: g.request.Step, ActionID: g.request.ActionID, Action: g.request.Action, Deadline: g.request.Deadline}
		if g.kind == KindApprovalRequested {
			s.Approvals = append(s.Approvals, p)
		} else {
			s.Deliveries = append(s.Deliveries, p)
		}
	}
	return s
}
