package polyloop

import (
	"fmt"
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

	totals totalsAcc
	hist   historyBuilder
}

// batchAction is one action of the open batch, by its index.
type batchAction struct {
	intent  *ActionIntent  // the latest intent, nil until the action starts
	settled *SettledAction // nil until its outcome is recorded
}

// open reports whether the action has started and has no outcome yet.
func (a batchAction) open() bool { return a.intent != nil && a.settled == nil }

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
	if err := st.check(r); err != nil {
		return err
	}
	st.fold(r.Body)
	st.next++
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
		return nil
	}
	switch b := r.Body.(type) {
	case *RunStarted:
		return st.corrupt(r, "run_started after the first record")
	case *ConfigOverride:
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
		if st.phase != phaseActing || b.Step != st.step || b.Action >= len(st.batch) || !st.batch[b.Action].open() {
			return st.corrupt(r, "child_reception outside the open action %d of step %d", b.Action, b.Step)
		}
		return nil
	case *StepCompleted:
		return st.checkStepCompleted(r, b)
	case *RunFinished:
		return st.checkRunFinished(r, b)
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
	for i, o := range st.batch {
		if i != b.Index && o.intent != nil && o.intent.ActionID == b.ActionID {
			return st.corrupt(r, "action_intent %q: the id is taken by action %d of the batch", b.ActionID, i)
		}
	}
	return nil
}

// settles finds the open action a settlement names.
func (st *logState) settles(s *SettledAction) (int, bool) {
	for i, a := range st.batch {
		if a.open() && a.intent.ActionID == s.ResultID {
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

// fold updates the state with a record the grammar accepted.
func (st *logState) fold(body RecordBody) {
	st.totals.add(body)
	switch b := body.(type) {
	case *RunStarted:
		st.started, st.phase = b, phaseIdle
		st.setSnapshot(b.Snapshot, b.SnapshotHash)
		st.hist.start(b.Snapshot)
	case *ConfigOverride:
		st.setSnapshot(b.Snapshot, b.SnapshotHash)
		st.hist.setSystem(b.Snapshot.System)
	case *ModelCallIntent:
		st.phase, st.step, st.attempt, st.callID = phaseModelIntent, b.Step, b.Attempt, b.CallID
		st.reply, st.batch, st.receptions = nil, st.batch[:0], nil
	case *ModelCallResult:
		if b.Failure != nil {
			st.phase = phaseModelFailed
		} else {
			st.phase, st.reply = phaseModelResult, b.Reply
		}
	case *ActionIntent:
		if st.phase == phaseModelResult {
			n := b.BatchSize()
			st.phase, st.batch = phaseActing, slices.Grow(st.batch[:0], n)[:n]
			clear(st.batch)
		}
		st.batch[b.Index].intent = b
	case *ActionResult:
		i, _ := st.settles(&b.SettledAction)
		st.batch[i].settled = &b.SettledAction
	case *ChildReception:
		if st.receptions == nil {
			st.receptions = map[string]*ChildReception{}
		}
		st.receptions[b.ChildRunID] = b
	case *StepCompleted:
		st.completeStep(b)
	case *RunFinished:
		st.phase, st.fin = phaseFinished, b
	}
}

func (st *logState) completeStep(b *StepCompleted) {
	if b.Outcome != nil {
		i, _ := st.settles(&b.SettledAction)
		st.batch[i].settled = &b.SettledAction
	}
	st.hist.completeStep(st.reply, b, st.batch)
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
