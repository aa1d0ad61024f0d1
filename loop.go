package polyloop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/polyloop/polyloop/diag"
)

// driver runs one invocation (Run or Resume) of one run. It owns the
// in-memory state derived from the log: the next seq, the totals, the
// history. Records that follow each other with no side effect in between are
// gathered in pending and written by one Append just before the next external
// effect (a model call, an action) or at the end: two durable writes per step.
type driver struct {
	r       *Runner
	runID   string
	snap    Snapshot
	hash    string
	tools   map[string]ToolSpec
	synth   SyntheticObservations
	nextSeq int64
	totals  totalsAcc
	hist    historyBuilder
	pending []Record
	sinks   *sinkSet
	// outcome is the executor's own outcome of the step in pending, for the
	// action_finished event (the audit channel).
	outcome *ActionOutcome
	// evModelAttempt and evActionAttempt are the attempts of the last
	// intents emitted, for the events of their results.
	evModelAttempt, evActionAttempt int

	// opts are the options of the Resume that drives this invocation; they
	// carry over to the children it resumes.
	opts ResumeOptions

	recMu      sync.Mutex
	receptions map[string]*ChildReception // by child run id

	// broken is the persistence error after which the run writes nothing
	// more (SPEC §7.4), even if an executor swallowed it.
	broken error
}

// entry is a point at which the loop continues.
type entry struct {
	kind    entryKind
	step    int
	attempt int
	callID  string
	reply   *ModelReply
	action  Action
	reason  StopReason
	answer  string
}

type entryKind int

const (
	entryStep      entryKind = iota // stop checks, then the model call
	entryModelCall                  // the model call (attempt)
	entryDecide                     // parse a reply and act on the decision
	entryAction                     // write the action intent and execute
	entryFinish                     // write RunFinished
)

func newDriver(r *Runner, runID string, snap Snapshot, hash string) *driver {
	d := &driver{r: r, runID: runID, snap: snap, hash: hash}
	d.setSnapshot(snap, hash)
	d.sinks = newSinkSet(r.Sinks, r.SinkPolicy)
	return d
}

func (d *driver) setSnapshot(snap Snapshot, hash string) {
	d.snap, d.hash = snap, hash
	d.tools = make(map[string]ToolSpec, len(snap.Tools))
	for _, t := range snap.Tools {
		d.tools[t.Name] = t
	}
	d.synth = snap.Synthetic.withDefaults()
}

func (d *driver) now() time.Time {
	if d.r.Clock != nil {
		return d.r.Clock()
	}
	return time.Now()
}

// add queues a record for the next write and folds it into the in-memory
// state, which is thereby always the state of the log plus pending.
func (d *driver) add(b RecordBody) {
	d.pending = append(d.pending, Record{Seq: d.nextSeq + int64(len(d.pending)), At: d.now(), Body: b})
	d.totals.add(b)
	d.hist.add(b)
}

// flush writes the pending records in one Append, then emits their events.
func (d *driver) flush(ctx context.Context) error {
	if len(d.pending) == 0 {
		return nil
	}
	if d.broken != nil {
		return d.broken
	}
	recs := d.pending
	if err := d.r.Store.Append(ctx, d.runID, recs...); err != nil {
		d.broken = persistenceError("append", d.runID, err)
		if cerr := ctx.Err(); cerr != nil {
			// Cancelled while the append was under way: its outcome is
			// unknown (§7.4), and the cancellation is not swallowed.
			return errors.Join(cerr, d.broken)
		}
		return d.broken
	}
	d.nextSeq += int64(len(recs))
	d.pending = nil
	if len(d.r.Sinks) > 0 && d.sinks.active() {
		for i := range recs {
			d.emitRecord(ctx, recs[i])
		}
	}
	return nil
}

// FactWriteTimeout bounds the write of records that are already facts (a
// model result, a step record, a determined finish) when the run's context
// has been cancelled: they are written on a context detached from the
// cancellation, so that a cancelled run loses nothing that happened. It
// bounds only what honours the context: a store that has begun a commit
// finishes it, and each event delivered afterwards may take up to the
// sinks' own timeout.
const FactWriteTimeout = 10 * time.Second

func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), FactWriteTimeout)
}

// stopForCancel is how the loop stops when its context is done before the
// next side effect: the records already queued — results and step records,
// facts of what happened — are written on a detached context, then the
// context's error is returned as is. No intent is written: nothing new
// starts.
func (d *driver) stopForCancel(ctx context.Context, cause error) error {
	if !d.pendingFacts() {
		return cause // a run_started or config_override alone: nothing happened yet
	}
	wctx, cancel := detached(ctx)
	defer cancel()
	if err := d.flush(wctx); err != nil {
		return errors.Join(cause, err)
	}
	return cause
}

// pendingFacts reports whether the queued records hold something that
// happened: a model result or a step record.
func (d *driver) pendingFacts() bool {
	for _, r := range d.pending {
		switch r.Body.(type) {
		case *ModelCallResult, *StepCompleted:
			return true
		}
	}
	return false
}

// loop runs the run from an entry point until it finishes or fails.
func (d *driver) loop(ctx context.Context, e entry) (RunResult, error) {
	var err error
	for {
		switch e.kind {
		case entryStep:
			if reason := d.stopCheck(e.step); reason != "" {
				e = entry{kind: entryFinish, reason: reason}
				continue
			}
			e = entry{kind: entryModelCall, step: e.step, attempt: 1}
		case entryModelCall:
			e, err = d.callModel(ctx, e.step, e.attempt)
		case entryDecide:
			e, err = d.decide(e.step, e.callID, e.reply)
		case entryAction:
			e, err = d.act(ctx, e)
		case entryFinish:
			return d.finish(ctx, e.reason, e.answer)
		}
		if err != nil {
			return RunResult{RunID: d.runID}, err
		}
	}
}

// stopCheck applies the limits before step n.
func (d *driver) stopCheck(n int) StopReason {
	l := d.snap.Limits
	t := d.totals.t
	switch {
	case l.MaxSteps > 0 && n > l.MaxSteps:
		return StopMaxSteps
	case l.MaxTokens > 0 && t.Tokens() >= l.MaxTokens:
		return StopTokenBudget
	case l.MaxCostUSD > 0 && t.CostUSD >= l.MaxCostUSD:
		return StopCostBudget
	}
	return ""
}

func modelCallID(step, attempt int) string {
	return "m" + strconv.Itoa(step) + "." + strconv.Itoa(attempt)
}

func actionID(step int) string { return "a" + strconv.Itoa(step) }

func (d *driver) callModel(ctx context.Context, step, attempt int) (entry, error) {
	if err := ctx.Err(); err != nil {
		return entry{}, d.stopForCancel(ctx, err)
	}
	if stopRequested(ctx) {
		return entry{}, d.stopOnRequest(ctx)
	}
	callID := modelCallID(step, attempt)
	d.add(&ModelCallIntent{Step: step, CallID: callID, Attempt: attempt})
	if err := d.flush(ctx); err != nil {
		return entry{}, err
	}
	req := ModelRequest{RunID: d.runID, Step: step, CallID: callID, Messages: d.hist.msgs,
		Tools: d.snap.Tools, Params: d.snap.Model}
	reply, err := d.r.Model.Complete(ctx, req)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			// Cancellation is not a model failure: nothing is recorded.
			if errors.Is(err, cerr) {
				return entry{}, err
			}
			return entry{}, fmt.Errorf("%w (model client returned: %w)", cerr, err)
		}
		d.add(&ModelCallResult{Step: step, CallID: callID, Failure: diag.From(err)})
		return entry{kind: entryFinish, reason: StopLLMError}, nil
	}
	if err := compactArgs(reply.ToolCalls); err != nil {
		// The client broke its contract: no usable reply (§3.1 accepts a
		// client bug counted as llm_error).
		d.add(&ModelCallResult{Step: step, CallID: callID, Failure: diag.From(err)})
		return entry{kind: entryFinish, reason: StopLLMError}, nil
	}
	d.add(&ModelCallResult{Step: step, CallID: callID, Reply: &reply})
	return entry{kind: entryDecide, step: step, callID: callID, reply: &reply}, nil
}

// compactArgs puts tool-call arguments in the form the log stores them in
// (compact JSON), so that the live run and a resumed one parse and show the
// model the same bytes. Arguments that are not JSON break the ModelClient
// contract: ErrInvalidReply.
func compactArgs(calls []ToolCall) error {
	for i := range calls {
		a := calls[i].Args
		if len(a) == 0 || (isCompact(a) && json.Valid(a)) {
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

// decide parses a reply. A parser panic propagates: it is a parser bug.
func (d *driver) decide(step int, callID string, reply *ModelReply) (entry, error) {
	switch dec := d.r.Parser.Parse(*reply).(type) {
	case Act:
		if a := dec.Action.Args; len(a) > 0 && !json.Valid(a) {
			return entry{}, fmt.Errorf("%w: parser %T returned arguments that are not JSON for tool %q", ErrInvalidDecision, d.r.Parser, dec.Action.Tool)
		}
		return entry{kind: entryAction, step: step, callID: callID, action: dec.Action, attempt: 1}, nil
	case Final:
		d.add(&StepCompleted{Step: step, ModelCallID: callID, Decision: DecisionFinal, Answer: dec.Answer})
		return entry{kind: entryFinish, reason: StopCompleted, answer: dec.Answer}, nil
	case Invalid:
		d.add(&StepCompleted{Step: step, ModelCallID: callID, Decision: DecisionInvalid, Feedback: dec.Feedback})
		return entry{kind: entryStep, step: step + 1}, nil
	default:
		return entry{}, fmt.Errorf("polyloop: parser %T returned %T, not one of Act, Final, Invalid", d.r.Parser, dec)
	}
}

// policy is the replay policy of an action: from the tool spec; a code action
// or an unknown tool is never replayed.
func (d *driver) policy(a Action) ReplayPolicy {
	if a.IsCode() {
		return NeverReplay
	}
	if t, ok := d.tools[a.Tool]; ok {
		return t.Replay.normalize()
	}
	return NeverReplay
}

// act writes the action intent, executes the action and queues the step
// record, unconditionally, before any stop decision. An executor error or
// panic propagates and leaves the log at intent-without-step.
func (d *driver) act(ctx context.Context, e entry) (entry, error) {
	if err := ctx.Err(); err != nil {
		return entry{}, d.stopForCancel(ctx, err)
	}
	intent := &ActionIntent{Step: e.step, ActionID: actionID(e.step), Attempt: e.attempt,
		ModelCallID: e.callID, Action: e.action, Replay: d.policy(e.action)}
	d.add(intent)
	if err := d.flush(ctx); err != nil {
		return entry{}, err
	}
	actx, scope := withAction(ctx, d, intent)
	out, err := d.r.Executor.Execute(actx, e.action)
	if n := scope.close(); n > 0 && err == nil {
		// A child is still being received: its reception would land after
		// the step record. The step's state is unknown, as after an error.
		return entry{}, fmt.Errorf("%w: action %s returned while %d child run(s) it started were still being received", ErrNotInAction, intent.ActionID, n)
	}
	if err != nil {
		return entry{}, err
	}
	if !out.Status.Valid() {
		return entry{}, fmt.Errorf("%w: status %q for action %s", ErrInvalidOutcome, out.Status, intent.ActionID)
	}
	d.outcome = &out
	sc := &StepCompleted{Step: e.step, ModelCallID: e.callID, Decision: DecisionAct, ResultID: intent.ActionID,
		Outcome: &StepOutcome{Status: out.Status, Done: out.Done, ExecutorTruncated: out.TruncatedChars}}
	switch out.Status {
	case Executed:
		obs, dropped := truncateRunes(out.Observation, d.snap.Limits.ObservationLimit)
		sc.Observation, sc.TruncatedChars = obs, dropped+out.TruncatedChars
	case NotExecuted:
		sc.Observation, sc.Synthetic = d.synth.NotExecuted, true
	case EnvError:
		sc.Observation, sc.Synthetic = d.synth.EnvError, true
	}
	d.add(sc)
	switch {
	case out.Status == EnvError:
		return entry{kind: entryFinish, reason: StopEnvError}, nil
	case out.Status == Executed && out.Done:
		return entry{kind: entryFinish, reason: StopCompleted}, nil
	}
	return entry{kind: entryStep, step: e.step + 1}, nil
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
	return s[:cut] + "\n[… " + strconv.Itoa(dropped) + " characters truncated]", dropped
}

func (d *driver) finish(ctx context.Context, reason StopReason, answer string) (RunResult, error) {
	fin := &RunFinished{StopReason: reason, FinalAnswer: answer, Totals: d.totals.totals(), Sinks: d.sinks.counts()}
	d.add(fin)
	if cause := ctx.Err(); cause != nil {
		// The finish is already determined by what happened: record it.
		wctx, cancel := detached(ctx)
		defer cancel()
		if err := d.flush(wctx); err != nil {
			return RunResult{RunID: d.runID}, errors.Join(cause, err)
		}
	} else if err := d.flush(ctx); err != nil {
		return RunResult{RunID: d.runID}, err
	}
	return RunResult{RunID: d.runID, StopReason: reason, FinalAnswer: answer, Totals: fin.Totals,
		Sinks: d.sinks.snapshot(), Records: d.nextSeq}, nil
}

// reception returns the recorded reception of a child, if any.
func (d *driver) reception(childID string) *ChildReception {
	d.recMu.Lock()
	defer d.recMu.Unlock()
	return d.receptions[childID]
}

// writeReception appends a child reception to the parent's log during the
// parent's action. Children may be received from several goroutines; the
// writes are serialized. Nothing else is pending while an action runs.
func (d *driver) writeReception(ctx context.Context, rec *ChildReception) error {
	d.recMu.Lock()
	defer d.recMu.Unlock()
	d.add(rec)
	if cause := ctx.Err(); cause != nil {
		// The handler ran: its reception is a fact, recorded like the
		// others when the run is being cancelled.
		wctx, cancel := detached(ctx)
		defer cancel()
		if err := d.flush(wctx); err != nil {
			return errors.Join(cause, err)
		}
	} else if err := d.flush(ctx); err != nil {
		return err
	}
	if d.receptions == nil {
		d.receptions = map[string]*ChildReception{}
	}
	d.receptions[rec.ChildRunID] = rec
	return nil
}
