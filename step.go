package polyloop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/polyloop/polyloop/diag"
)

// machine is the loop of one run as a pure state machine, after etcd's raft
// RawNode: no context, no I/O, no clock, no goroutines, and not safe for
// concurrent use. It is fed facts — a model reply or failure, a decision, an
// action's outcome, a child's reception — and answers, through next, with a
// ready: the records to make durable and the effect to perform after them.
//
// The obligation of the driver: the records of a ready MUST be durable (one
// Store.Append that returned nil) BEFORE its effect starts, and each fact
// MUST be fed to the machine before the next call to next. A ready whose
// effect is effectWait carries records that are facts already: they are
// written at once, and the next fact comes from actions still in flight.
//
// Every record the machine produces goes through the log's one fold
// (logState.apply) at once, so a record that breaks the grammar is caught
// where it is made; that is a bug in the machine, and it panics.
type machine struct {
	st      *logState
	pending []Record
	// wrote is the last record of the last write handed out; nil before
	// the invocation's first.
	wrote RecordBody

	// calling is set while a model call handed out has not been answered;
	// in phaseModelIntent without it, the intent is an orphan read back
	// from the log, and the call is retried under a new intent.
	calling bool
	// actions is the decided batch of the open step: nil until the parser
	// decided in this invocation (on resume, until it parsed the stored
	// reply again).
	actions []Action
	// verify asks that the awaited decision reproduce the actions already
	// in the log (resume of an open batch).
	verify bool
	// running marks, by index, the actions handed out for execution whose
	// outcome has not been fed back.
	running []bool
	// intents is the buffer of the last execute effect (reused: the loop's
	// per-step cost matters).
	intents []*ActionIntent

	// now is the time the driver read before asking for the next effect
	// or feeding a fact: a gate's deadline is computed from it and
	// compared with it, the time limits compare the log's times with it,
	// and, under a time limit, the records are stamped with it. It is a
	// fact fed in, like the others; nothing else reads it.
	now time.Time
	// writeAt is, under a time limit, the time of the write being made:
	// the time of its first record (stampRecord); tookAt is the time of
	// the last write handed out (zero when it had no records).
	writeAt, tookAt time.Time
	// needsApproval is the agent's approval policy (ApprovalPolicy.Needs),
	// for tools with ApprovalByPolicy.
	needsApproval func(Action) bool
	// reconciles says which actions of unknown outcome the executor
	// answers for (Reconciler, ReconcileScope); nil when it answers for
	// none. A fact the driver feeds in, like needsApproval.
	reconciles func(Action) bool

	// envAt is the durable snapshot the run's environment is in now, in
	// this invocation; empty until the driver made one (effectEnv), and
	// after a snapshot that failed.
	envAt EnvSnapshot

	machineMemory // the view fed and the maintenance under way (step_memory.go)
}

// effectKind is what the driver does after making a ready's records
// durable.
type effectKind int

const (
	// effectWait: nothing to start; the next facts come from the actions
	// in flight.
	effectWait effectKind = iota
	// effectCallModel: call the model with effect.req, then feed
	// modelReplied or modelFailed.
	effectCallModel
	// effectParse: parse effect.reply, then feed decided. Parsing has no
	// side effect, so a parse ready carries no records.
	effectParse
	// effectExecute: execute effect.intents (one at a time, in order, or
	// all at once), feeding actionDone for each outcome.
	effectExecute
	// effectFinish: the run's finish is determined (effect.reason); call
	// finish to get the RunFinished record.
	effectFinish
	// effectSuspend: nothing can go on until a gate is answered; the
	// invocation returns with the run suspended (effect.suspended).
	effectSuspend
	// effectView: feed the current version of the agent's view (viewed)
	// for the next model-call intent. Asking has no side effect, so a view
	// ready carries no records.
	effectView
	// effectMaintain: run the maintenance of the step just completed
	// (effect.maint), then feed maintained.
	effectMaintain
	// effectReconcile: ask the executor's Reconciler about each of
	// effect.intents (actions of unknown outcome, never_replay), feeding
	// reconciled for each answer. Asking has no side effect the run owns,
	// so a reconcile ready carries no records.
	effectReconcile

	// effectEnv: bring the run's environment to effect.envFrom (create it
	// from that snapshot, or restore it; with envFrom empty, create it from
	// the image and snapshot it), then feed envReady with the snapshot it
	// is in, or envFailed. It comes before the intent of the action
	// effect.envFor, whose intent names that snapshot: no action starts
	// whose pre-effect state is not durable. Like a parse, it carries no
	// records: what is pending waits for the intent's write.
	effectEnv
)

type effect struct {
	kind      effectKind
	req       ModelRequest
	reply     *ModelReply
	intents   []*ActionIntent
	reason    StopReason
	answer    string
	suspended *Suspension
	maint     MaintainedStep
	envFrom   EnvSnapshot
	envFor    int
}

// ready is what the machine asks of its driver: make records durable, then
// perform effect.
type ready struct {
	records []Record
	effect  effect
}

// facts are the records of a ready that are facts of what happened: its
// records without the intents at their end, or nil when no fact remains (a
// run_started or config_override alone: nothing happened yet; a
// lease_takeover beside the run_started of a new run is no fact of the run
// either). A driver
// that stops before the effect — its context was cancelled — writes these
// and no intent: nothing new starts.
func (rd ready) facts() []Record {
	recs := rd.records
	for len(recs) > 0 {
		switch recs[len(recs)-1].Body.(type) {
		case *ModelCallIntent, *ActionIntent:
			recs = recs[:len(recs)-1]
			continue
		}
		break
	}
	fresh := len(recs) > 0 && recs[0].Kind() == KindRunStarted
	for _, r := range recs {
		switch r.Body.(type) {
		case *RunStarted, *ConfigOverride:
		case *LeaseTakeover:
			if !fresh {
				return recs
			}
		default:
			return recs
		}
	}
	return nil
}

// The machine's write boundaries: which records go in one Append. A ready's
// records are one write; writeStarts says, for every record kind, after
// which records an invocation that has not stopped begins a write with it,
// or nil when it never does — the record goes in the same write as the one
// before it, or only a new invocation (a resume, a gate's answer) writes it
// first. The machine holds itself to it: every write of an invocation but
// its first must begin as writeStarts allows (take panics otherwise), and
// the step traces (testdata/step) print each write's boundary. A log's
// readers find where invocations began by it (ObserveLog: Fact.Invocation),
// so that changing the grouping changes the traces, never the readers
// silently.
var writeStarts = map[RecordKind]func(prev, next RecordBody) bool{
	// The run's first write, and never after it.
	KindRunStarted: nil,
	// With run_started, or with the records that end the previous step
	// (step_completed, maintenance_done); first only in a resume.
	KindModelCallIntent: nil,
	// Right after the write of its intent: the call returned.
	KindModelCallResult: func(prev, _ RecordBody) bool {
		_, ok := prev.(*ModelCallIntent)
		return ok
	},
	// With the reply that decided it, or with the settlement of the
	// batch's previous action; first only in a resume.
	KindActionIntent: nil,
	// When an action in flight ends, or receives a child.
	KindActionResult:   func(prev, _ RecordBody) bool { return actionInFlight(prev) },
	KindStepCompleted:  func(prev, _ RecordBody) bool { return actionInFlight(prev) },
	KindChildReception: childReceived,
	// A step's maintenance writes each operation's outcome and each
	// reception as it comes, and maintenance_done when its Maintainer
	// returns (with the next step's intent or the run's finish).
	KindMaintenanceOp:   func(prev, _ RecordBody) bool { return inMaintenance(prev) },
	KindMaintenanceDone: func(prev, _ RecordBody) bool { return inMaintenance(prev) },
	// With the step record or maintenance_done that ends the run; first
	// only in a resume (a finish the log already determined).
	KindRunFinished: nil,
	// A resume asks a reconciler before anything else, and writes the
	// answers with what follows them (an adopted settlement, a re-run's
	// intent, the finish).
	KindActionReconciled: nil,
	// Only a resume writes them first.
	KindConfigOverride: nil,
	KindLeaseTakeover:  nil,
	// With the reply whose batch waits at the gate.
	KindApprovalRequested: nil,
	KindDeliveryRequested: nil,
	// Written by a gate's answer (Runner.Approve, Runner.Deliver), or by a
	// resume after the deadline.
	KindApprovalDecided:  nil,
	KindDeliveryReceived: nil,
}

// continuesWrite reports whether an invocation that has not stopped may
// begin a write with next after a write that ended with prev.
func continuesWrite(prev, next RecordBody) bool {
	after := writeStarts[next.Kind()]
	return after != nil && after(prev, next)
}

// actionInFlight reports whether prev, the last record of a write, leaves
// an action of the step in flight: its intent, the settlement of another
// action of the batch, or the reception of a child an action started.
func actionInFlight(prev RecordBody) bool {
	switch b := prev.(type) {
	case *ActionIntent, *ActionResult:
		return true
	case *ChildReception:
		return !b.Maintenance
	}
	return false
}

// inMaintenance reports whether prev, the last record of a write, leaves a
// step's maintenance under way: the step's record, an operation's outcome
// or a reception of the maintenance — or the first write of a resume that
// goes on with the maintenance: its configuration override or lease
// take-over, written as the Maintainer starts.
func inMaintenance(prev RecordBody) bool {
	switch b := prev.(type) {
	case *StepCompleted, *MaintenanceOp, *ConfigOverride, *LeaseTakeover:
		return true
	case *ChildReception:
		return b.Maintenance
	}
	return false
}

// childReceived: an action receives its child while the action is in
// flight; a step's maintenance receives its children while it is under way.
func childReceived(prev, next RecordBody) bool {
	if next.(*ChildReception).Maintenance {
		return inMaintenance(prev)
	}
	return actionInFlight(prev)
}

// newMachine returns a machine that continues from st: the fold of the log
// so far (empty for a new run, whose RunStarted is then added first).
func newMachine(st *logState) *machine { return &machine{st: st} }

// add folds a record body into the state and queues it.
func (m *machine) add(b RecordBody) { m.addRecord(Record{Seq: m.st.next, Body: b}) }

// addRecord folds a record and queues it; its time, when set (a fork's
// copies), is kept.
func (m *machine) addRecord(r Record) {
	if m.st.clocked || startsClocked(r.Body) {
		m.stampRecord(&r)
	}
	if err := m.st.apply(r); err != nil {
		panic(fmt.Sprintf("polyloop: internal error: the loop built a record the log's grammar refuses: %v", err))
	}
	if len(m.pending) == cap(m.pending) {
		// A chunk for the next writes (two to four records each): the
		// writes handed out are slices of it that nothing overwrites.
		chunk := make([]Record, len(m.pending), len(m.pending)+recordChunk)
		copy(chunk, m.pending)
		m.pending = chunk
	}
	m.pending = append(m.pending, r)
}

// recordChunk is how many records the machine's pending writes take room
// for at a time.
const recordChunk = 64

// handOut hands out the records pending, capped (an append to them copies
// them), and keeps the room after them for the next write.
func (m *machine) handOut() []Record {
	n := len(m.pending)
	recs := m.pending[:n:n]
	m.pending = m.pending[n:]
	return recs
}

// take hands out the records pending: the next write. Every write but the
// invocation's first begins as writeStarts allows after the write before
// it; anything else is a bug in the machine, and it panics.
func (m *machine) take() []Record {
	recs := m.handOut()
	m.tookAt = time.Time{}
	if len(recs) == 0 {
		return recs
	}
	m.tookAt = recs[0].At
	if m.wrote != nil && !continuesWrite(m.wrote, recs[0].Body) {
		panic(fmt.Sprintf("polyloop: internal error: the machine began a write with %s after %s, which writeStarts says only a new invocation does",
			recs[0].Kind(), m.wrote.Kind()))
	}
	m.wrote = recs[len(recs)-1].Body
	return recs
}

// finishAt is the time of a run_finished under a time limit: that of the
// write it ends, when the ready that announced the finish had records (the
// records of one write share one time); zero otherwise (a write of its own,
// stamped as it is made).
func (m *machine) finishAt() time.Time {
	if len(m.pending) == 0 {
		return m.tookAt
	}
	return time.Time{}
}

// next queues the records that lead to the next effect and returns them
// with it.
func (m *machine) next() ready {
	e := m.advance()
	if e.kind == effectParse || e.kind == effectView || e.kind == effectReconcile || e.kind == effectEnv {
		return ready{effect: e} // what is pending waits for the next write
	}
	return ready{records: m.take(), effect: e}
}

func (m *machine) advance() effect {
	st := m.st
	switch st.phase {
	case phaseIdle:
		if st.maintenancePending() {
			return m.maintain()
		}
		if reason := m.stopCheck(); reason != "" {
			return effect{kind: effectFinish, reason: reason}
		}
		if m.wantsView() {
			return effect{kind: effectView}
		}
		n := st.step + 1
		m.add(&ModelCallIntent{Step: n, CallID: modelCallID(n, 1), Attempt: 1, View: m.viewRef()})
		return m.callModel()
	case phaseModelIntent:
		if m.calling {
			panic("polyloop: internal error: next called while the model call is under way")
		}
		if m.wantsView() {
			return effect{kind: effectView}
		}
		a := st.attempt + 1 // an orphaned intent: the call is made again
		m.add(&ModelCallIntent{Step: st.step, CallID: modelCallID(st.step, a), Attempt: a, View: m.viewRef()})
		return m.callModel()
	case phaseModelResult:
		if m.actions == nil {
			return effect{kind: effectParse, reply: st.reply}
		}
		return m.act()
	case phaseActing:
		if m.actions == nil {
			return m.resumeBatch()
		}
		return m.act()
	case phaseModelFailed:
		return effect{kind: effectFinish, reason: StopLLMError}
	case phaseDecided:
		if st.maintenancePending() {
			return m.maintain()
		}
		return effect{kind: effectFinish, reason: st.decided, answer: st.answer}
	}
	panic(fmt.Sprintf("polyloop: internal error: no next effect in phase %d", st.phase))
}

// stopCheck applies the limits before the next step. They bound the
// trajectory: in a fork, the steps, tokens and cost of the copied prefix
// count too. The time limits compare the log's times (runClock) with now,
// the driver's clock: only at step boundaries, so the step under way when a
// limit is reached ends first.
func (m *machine) stopCheck() StopReason {
	l, t, c := m.st.snap.Limits, m.st.totals.t, m.st.copied.t
	switch {
	case l.MaxSteps > 0 && m.st.step+1 > l.MaxSteps:
		return StopMaxSteps
	case l.MaxTokens > 0 && t.Tokens()+c.Tokens() >= l.MaxTokens:
		return StopTokenBudget
	case l.MaxCostUSD > 0 && t.CostUSD+c.CostUSD >= l.MaxCostUSD:
		return StopCostBudget
	case l.TimeLimit > 0 && m.st.clock.elapsed(m.now) >= l.TimeLimit:
		return StopTimeLimit
	case l.WorkingLimit > 0 && m.st.clock.working >= l.WorkingLimit:
		return StopWorkingLimit
	}
	return ""
}

func modelCallID(step, attempt int) string {
	var b [24]byte
	return string(strconv.AppendInt(append(strconv.AppendInt(append(b[:0], 'm'), int64(step), 10), '.'), int64(attempt), 10))
}

// actionID is the id of action index of a batch of n: "a<step>" for a batch
// of one (as in logs of version 1.0), "a<step>.<index+1>" otherwise.
func actionID(step, index, n int) string {
	var b [24]byte
	id := strconv.AppendInt(append(b[:0], 'a'), int64(step), 10)
	if n > 1 {
		id = strconv.AppendInt(append(id, '.'), int64(index+1), 10)
	}
	return string(id)
}

func (m *machine) callModel() effect {
	st := m.st
	m.calling = true
	return effect{kind: effectCallModel, req: ModelRequest{RunID: st.runID, Step: st.step, CallID: st.callID,
		Messages: m.requestMessages(), Tools: st.snap.Tools, Params: st.snap.Model}}
}

// modelReplied feeds the reply of the call under way. A reply whose tool-call
// arguments are not JSON breaks the ModelClient contract: the call failed
// (§3.1 accepts a client bug counted as llm_error), and what it consumed is
// kept.
func (m *machine) modelReplied(reply ModelReply) {
	m.calling = false
	st := m.st
	if err := compactArgs(reply.ToolCalls); err != nil {
		u := reply.Usage
		m.add(&ModelCallResult{Step: st.step, CallID: st.callID, Attempt: st.attempt, Failure: diag.From(err), Usage: &u})
		return
	}
	// The record and its reply in one allocation.
	x := &struct {
		r     ModelCallResult
		reply ModelReply
	}{reply: reply}
	x.r = ModelCallResult{Step: st.step, CallID: st.callID, Attempt: st.attempt, Reply: &x.reply}
	m.add(&x.r)
}

// modelFailed feeds the failure of the call under way (not a cancellation:
// the driver writes nothing for that). What the failed call is known to have
// consumed (a UsageCarrier in the error's chain) is kept.
func (m *machine) modelFailed(err error) {
	m.calling = false
	st := m.st
	res := &ModelCallResult{Step: st.step, CallID: st.callID, Attempt: st.attempt, Failure: diag.From(err)}
	var uc UsageCarrier
	if errors.As(err, &uc) {
		u := uc.CallUsage()
		res.Usage = &u
	}
	m.add(res)
}

// compactArgs puts tool-call arguments in the form the log stores them in
// (compact JSON), so that the live run and a resumed one parse and show the
// model the same bytes. Arguments that are not JSON, or beyond the log's
// limits (CheckJSONLimits: a log must never hold what its reader refuses),
// break the ModelClient contract: ErrInvalidReply.
func compactArgs(calls []ToolCall) error {
	for i := range calls {
		a := calls[i].Args
		if err := CheckJSONLimits(a); err != nil {
			return fmt.Errorf("%w: tool call %q: %w", ErrInvalidReply, calls[i].Name, err)
		}
		if len(a) == 0 || (isCompact(a) && validJSON(a)) {
			continue
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, a); err != nil {
			return fmt.Errorf("%w: tool call %q has arguments that are not JSON: %v", ErrInvalidReply, calls[i].Name, err)
		}
		calls[i].Args = buf.Bytes()
	}
	return nil
}

// isCompact reports whether JSON text has no whitespace outside strings.
func isCompact(b []byte) bool {
	in, esc := false, false
	for _, c := range b {
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\n' || c == '\t' || c == '\r'):
			return false
		}
	}
	return true
}

// decided feeds the parser's decision on the reply of the open step. An Act
// with no action or with arguments that are not JSON is a parser bug
// (ErrInvalidDecision); on resume of an open batch, a decision that does not
// reproduce the actions in the log breaks the parser's determinism
// (ErrNondeterministicParser). Nothing is recorded for a decision refused.
func (m *machine) decided(dec Decision) error {
	st := m.st
	if m.verify {
		return m.verifyBatch(dec)
	}
	switch dec := dec.(type) {
	case Act:
		if err := checkActions(dec.Actions, st.replyCalls()); err != nil {
			return err
		}
		m.startBatch(dec.Actions)
	case Final:
		m.add(&StepCompleted{Step: st.step, ModelCallID: st.callID, Decision: DecisionFinal, Answer: dec.Answer})
	case Invalid:
		m.add(&StepCompleted{Step: st.step, ModelCallID: st.callID, Decision: DecisionInvalid, Feedback: dec.Feedback})
	default:
		return fmt.Errorf("polyloop: the parser returned %T, not one of Act, Final, Invalid", dec)
	}
	return nil
}

// checkActions checks a decision's actions: arguments that are JSON within
// the log's limits. Arguments that are, byte for byte, those of a tool call
// of the reply they come from were checked when the reply came in
// (compactArgs) or was read back, and are not checked again.
func checkActions(actions []Action, calls []ToolCall) error {
	if len(actions) == 0 {
		return fmt.Errorf("%w: an Act without actions", ErrInvalidDecision)
	}
	for _, a := range actions {
		if callArgs(a.Args, calls) {
			continue
		}
		if len(a.Args) > 0 && !json.Valid(a.Args) {
			return fmt.Errorf("%w: arguments that are not JSON for tool %q", ErrInvalidDecision, a.Tool)
		}
		if err := CheckJSONLimits(a.Args); err != nil {
			return fmt.Errorf("%w: arguments for tool %q: %w", ErrInvalidDecision, a.Tool, err)
		}
	}
	return nil
}

// callArgs reports whether args are the arguments of one of calls.
func callArgs(args []byte, calls []ToolCall) bool {
	for i := range calls {
		if bytes.Equal(args, calls[i].Args) {
			return true
		}
	}
	return false
}

// resumeBatch continues an open batch read back from the log: the never_replay
// actions of unknown outcome are first put to the executor's reconciler, if
// it has one (effectReconcile); one that stays unknown finishes the run;
// otherwise the stored reply is parsed again, and must reproduce the batch,
// before any action runs again.
func (m *machine) resumeBatch() effect {
	if m.reconciles != nil {
		if ask := m.toReconcile(); len(ask) > 0 {
			return effect{kind: effectReconcile, intents: ask}
		}
	}
	for _, a := range m.st.batch {
		if a.open() && !a.replayable() {
			return effect{kind: effectFinish, reason: StopResumeStateUnknown}
		}
	}
	m.verify = true
	return effect{kind: effectParse, reply: m.st.reply}
}

func (m *machine) verifyBatch(dec Decision) error {
	m.verify = false
	st := m.st
	act, ok := dec.(Act)
	if ok && len(act.Actions) == len(st.batch) && checkActions(act.Actions, st.replyCalls()) == nil {
		for i, a := range st.batch {
			if (a.intent != nil || a.gate != nil) && !a.action().Equal(act.Actions[i]) {
				ok = false
			}
		}
	} else {
		ok = false
	}
	if !ok {
		return fmt.Errorf("%w: reply of %s no longer parses to the actions of its batch", ErrNondeterministicParser, st.callID)
	}
	m.startBatch(act.Actions)
	return nil
}

// startBatch takes the decided actions of the open step and requests the
// gates of those that need one and have none yet.
func (m *machine) startBatch(actions []Action) {
	m.actions = actions
	m.running = slices.Grow(m.running[:0], len(actions))[:len(actions)]
	clear(m.running)
	for i, a := range actions {
		if i < len(m.st.batch) && m.st.batch[i].gate != nil {
			continue
		}
		if kind := m.gateKind(a); kind != "" {
			m.requestGate(i, kind)
		}
	}
}

// act starts what can start of the decided batch: every action without an
// outcome that is not running — not yet started, or of unknown outcome and
// replay_safe (a replay) — all at once when the snapshot allows parallel
// actions, else the first of them once nothing runs. With nothing to start,
// the driver waits for the actions in flight.
func (m *machine) act() effect {
	m.expireGates()
	inEnv := m.st.snap.Environment != nil
	// In an environment the actions of a batch run one after another: each
	// starts from the snapshot the previous one left, which a replay
	// restores.
	parallel := m.st.snap.ParallelActions && !inEnv
	intents := m.intents[:0]
	blocked := false
	for i := range m.actions {
		if m.running[i] {
			if !parallel {
				break
			}
			continue
		}
		var a batchAction
		if i < len(m.st.batch) {
			a = m.st.batch[i]
		}
		if a.settled != nil {
			continue
		}
		if a.gate != nil {
			if !a.gate.answered() {
				blocked = true
				if !parallel {
					break
				}
				continue
			}
			if m.st.batch[i].settleable() { // denied or delivered: settled without running
				if m.settleGate(i) {
					m.intents = intents
					return m.advance()
				}
				continue
			}
		}
		if inEnv && m.st.envBroken() {
			// An action of this step met a broken environment: the rest of
			// the batch is not run in a world that may have lost its effects.
			if m.envFailed(i, errEnvBrokenInStep) {
				m.intents = intents
				return m.advance()
			}
			continue
		}
		if inEnv {
			if from, ok := m.envNeeded(i); !ok {
				m.intents = intents
				return effect{kind: effectEnv, envFrom: from, envFor: i}
			}
		}
		in := m.intent(i)
		in.EnvSnapshot = m.envAt
		m.add(in)
		m.running[i] = true
		intents = append(intents, in)
		if !parallel {
			break
		}
	}
	m.intents = intents
	switch {
	case len(intents) > 0:
		return effect{kind: effectExecute, intents: intents}
	case blocked && !slices.Contains(m.running, true):
		return effect{kind: effectSuspend, suspended: m.st.suspension()}
	}
	return effect{kind: effectWait}
}

// intent is the intent of action i of the batch: its first, or the next
// attempt of an intent of unknown outcome, under the same action id.
func (m *machine) intent(i int) *ActionIntent {
	st, a, n := m.st, m.actions[i], len(m.actions)
	in := &ActionIntent{Step: st.step, ActionID: actionID(st.step, i, n), Attempt: 1,
		ModelCallID: st.callID, Action: a, Replay: st.policy(a), Index: i}
	if st.reply != nil && st.refersToToolCalls() {
		in.ToolCall = FromToolCall(a, st.reply.ToolCalls)
	}
	if n > 1 {
		in.Of = n
	}
	var prev *ActionIntent
	if i < len(st.batch) {
		if prev = st.batch[i].intent; prev != nil {
			in.ActionID, in.Attempt = prev.ActionID, prev.Attempt+1
		}
	}
	if st.keyed {
		// A replay carries the key of the execution it repeats.
		if prev != nil {
			in.IdempotencyKey = prev.key(st.runID)
		} else {
			in.IdempotencyKey = IdempotencyKeyFor(st.runID, in.ActionID, in.Attempt)
		}
	}
	return in
}

// actionDone feeds the outcome of action i. The outcome is settled as the
// log keeps it — the observation truncated to the snapshot's limit, or the
// synthetic text for not_executed and env_error with the executor's own text
// kept as audit — in an ActionResult, or in the step record when it is the
// last of the batch to be settled. A status outside the three is an
// executor bug (ErrInvalidOutcome) and nothing is recorded.
func (m *machine) actionDone(i int, out ActionOutcome) error {
	return m.actionDoneEnv(i, out, "")
}

// actionDoneEnv is actionDone in a run with an environment: env is the
// snapshot the driver took after the action (empty when it could not).
func (m *machine) actionDoneEnv(i int, out ActionOutcome, env EnvSnapshot) error {
	st := m.st
	in := st.batch[i].intent
	if !out.Status.Valid() {
		return fmt.Errorf("%w: status %q for action %s", ErrInvalidOutcome, out.Status, in.ActionID)
	}
	m.running[i] = false
	if st.snap.Environment != nil {
		m.envAt = env
	}
	m.settleOutcome(i, out, in.ActionID, in.Attempt, env)
	return nil
}

// envNeeded reports whether the environment is in the state action i
// starts from, and if not, the snapshot to bring it to: the one the
// action's open restore_and_replay intent names (a replay restores the
// state before its first attempt), else the last the log names (empty for
// a run that has none yet: a new environment from the image).
func (m *machine) envNeeded(i int) (EnvSnapshot, bool) {
	want := m.st.envRef
	if i < len(m.st.batch) {
		if in := m.st.batch[i].intent; in != nil && in.policy() == RestoreAndReplay && in.EnvSnapshot != "" {
			want = in.EnvSnapshot
		}
	}
	if m.envAt == "" || (want != "" && m.envAt != want) {
		return want, false
	}
	return "", true
}

// envReady feeds the snapshot the environment is in after effectEnv.
func (m *machine) envReady(ref EnvSnapshot) { m.envAt = ref }

// envFailed feeds an environment that could not be brought to the state
// action i starts from (created, restored or snapshotted): the action is
// written with its intent, which names no snapshot and is never replayed,
// and settled at once as env_error, with a diagnostic that says which
// operation failed. Nothing of it ran. It reports whether that completed
// the batch.
func (m *machine) envFailed(i int, err error) bool {
	in := m.intent(i)
	in.Replay = NeverReplay
	m.add(in)
	m.envAt = ""
	return m.settleOutcome(i, ActionOutcome{Status: EnvError, Observation: envFailureText(err)}, in.ActionID, in.Attempt, "")
}

// errEnvBrokenInStep is why the actions of a batch after one that met a
// broken environment do not run.
var errEnvBrokenInStep = fmt.Errorf("%w: an earlier action of this step met a broken environment", ErrEnvFailed)

// settleOutcome settles action i with an outcome, as the log keeps it, and
// reports whether that completed the batch.
func (m *machine) settleOutcome(i int, out ActionOutcome, id string, attempt int, env EnvSnapshot) bool {
	st := m.st
	s := SettledAction{ResultID: id, Attempt: attempt, EnvSnapshot: env}
	switch out.Status {
	case Executed:
		obs, dropped := boundObservation(out.Observation, st.snap.Limits.ObservationLimit)
		s.Observation, s.TruncatedChars = obs, dropped+out.TruncatedChars
	case NotExecuted:
		s.Observation, s.Synthetic, s.Audit = st.synth.NotExecuted, true, truncateBytes(out.Observation, MaxAuditBytes)
	case EnvError:
		s.Observation, s.Synthetic, s.Audit = st.synth.EnvError, true, truncateBytes(out.Observation, MaxAuditBytes)
	}
	return m.record(s, StepOutcome{Status: out.Status, Done: out.Done, ExecutorTruncated: out.TruncatedChars})
}

// record writes a settlement with its outcome: in an ActionResult, or in
// the step record when it is the last of the batch (each record and its
// outcome in one allocation). It reports whether the batch is complete.
func (m *machine) record(s SettledAction, outcome StepOutcome) bool {
	st := m.st
	if st.unsettled() == 1 {
		x := &struct {
			r StepCompleted
			o StepOutcome
		}{o: outcome}
		s.Outcome = &x.o
		x.r = StepCompleted{Step: st.step, ModelCallID: st.callID, Decision: DecisionAct, SettledAction: s}
		m.add(&x.r)
		m.actions = nil
		return true
	}
	x := &struct {
		r ActionResult
		o StepOutcome
	}{o: outcome}
	s.Outcome = &x.o
	x.r = ActionResult{Step: st.step, SettledAction: s}
	m.add(&x.r)
	return false
}

// finish is the RunFinished record of the finish the last ready announced,
// with the invocation's sink failure counts, and the run's result. It is
// written in the ready's write, after its records.
func (m *machine) finish(e effect, sinks []SinkReport) ([]Record, RunResult) {
	fin := &RunFinished{StopReason: e.reason, FinalAnswer: e.answer, Totals: m.st.totals.totals(), Sinks: sinks}
	m.addRecord(Record{Seq: m.st.next, At: m.finishAt(), Body: fin})
	// RunFinished ends the write of the ready that announced the finish.
	recs := m.handOut()
	m.wrote = fin
	return recs, RunResult{RunID: m.st.runID, StopReason: e.reason, FinalAnswer: e.answer,
		Totals: fin.Totals, Records: m.st.next}
}

// truncateRunes keeps the first limit runes of s (limit 0: no limit) and
// reports how many runes were dropped. A note saying so is appended for the
// model.
func truncateRunes(s string, limit int) (string, int) {
	if limit <= 0 || len(s) <= limit {
		return s, 0
	}
	n := utf8.RuneCountInString(s)
	if n <= limit {
		return s, 0
	}
	cut := 0
	for i := 0; i < limit; i++ {
		_, size := utf8.DecodeRuneInString(s[cut:])
		cut += size
	}
	dropped := n - limit
	return s[:cut] + truncationNote(dropped), dropped
}

// boundObservation is an executed action's observation as the log keeps it,
// whatever the executor: valid UTF-8 (ValidText, so that the live history
// is the one a resumed run reads back), at most limit characters (the
// snapshot's ObservationLimit; 0: no limit) and at most MaxObservationBytes
// bytes, cut at a character boundary with a note that counts the characters
// dropped (truncateRunes's). It returns how many characters were dropped.
func boundObservation(s string, limit int) (string, int) {
	s = ValidText(s)
	obs, dropped := truncateRunes(s, limit)
	if len(obs) <= MaxObservationBytes {
		return obs, dropped
	}
	cut := MaxObservationBytes - observationNoteRoom
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	dropped = utf8.RuneCountInString(s[cut:])
	return s[:cut] + truncationNote(dropped), dropped
}

// observationNoteRoom is room enough under MaxObservationBytes for a
// truncation note.
const observationNoteRoom = 64

// truncationNote is the last line of an observation that was cut.
func truncationNote(dropped int) string {
	return "\n[… " + strconv.Itoa(dropped) + " characters truncated]"
}

// truncateBytes keeps at most n bytes of s, cut at a rune boundary, marking
// a cut with "…".
func truncateBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n -= len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
