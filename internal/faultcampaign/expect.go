package faultcampaign

import (
	"fmt"

	"github.com/polyloop/polyloop"
)

// Expected is what a plan's log must hold once Run performed it: whether
// the run finished and why, and its totals (the RunFinished record's for a
// finished run, else the totals of the log so far).
type Expected struct {
	Finished   bool
	StopReason polyloop.StopReason
	Totals     polyloop.Totals
	// Fired says the fault was reached (a fault at a step the run never
	// reaches does nothing).
	Fired bool
}

// Expect computes what Run(plan) must leave in the log, from the plan and
// the design's rules alone: the records each invocation writes and how
// they are grouped into Appends (SPEC §12, design 0006: sequential batches
// write each outcome with the next intent; the step record with the next
// model-call intent or the finish), where the fault stops an invocation
// and what of its writes is durable, how a resume continues (SPEC §7.2:
// an orphaned model-call intent is called again without a stop check; an
// action of unknown outcome is run again when replay_safe, and a
// never_replay one ends the run resume_state_unknown), the stop checks
// before each step (SPEC §5), and the totals of docs/log-format.md.
func Expect(p Plan) Expected {
	s := &sim{p: &p, fault: p.Fault}
	if p.Fault.Kind == CancelBeforeStart {
		s.fired, s.fault = true, Fault{} // nothing written; the second Run starts the run
	}
	s.fresh()
	if s.stopped && p.Resume && !s.finished() {
		s.fault, s.stopped = Fault{}, false
		s.resume()
	}
	e := Expected{Fired: s.fired, Totals: totalsOf(s.durable)}
	if fin := s.finishRecord(); fin != nil {
		e.Finished, e.StopReason, e.Totals = true, fin.reason, fin.totals
	}
	return e
}

// kind is a record kind of the simulated log.
type kind int

const (
	kStarted kind = iota
	kModelIntent
	kModelResult
	kActionIntent
	kActionResult
	kStep
	kFinished
)

// rec is a record of the simulated log: what the totals and the resume
// rules read of it.
type rec struct {
	kind                 kind
	step, index, attempt int
	// usage, on a model result: nil for a failure that recorded none.
	usage *usage
	// status and done, on an action result or a step record that settles
	// an action (act).
	act    bool
	status polyloop.ActionStatus
	done   bool
	tool   string
	// reason and totals, on the finish.
	reason polyloop.StopReason
	totals polyloop.Totals
}

type usage struct {
	in, out int64
	cost    *float64
}

// sim simulates the invocations of a plan.
type sim struct {
	p                *Plan
	fault            Fault // of the invocation under way
	durable, pending []rec
	stopped, fired   bool
}

func (s *sim) add(r rec) { s.pending = append(s.pending, r) }

// flush makes the pending records one Append. A store fault whose target
// is among them stops the invocation; its records are durable only when
// the acknowledgement alone was lost.
func (s *sim) flush() bool {
	if len(s.pending) == 0 {
		return true
	}
	recs := s.pending
	s.pending = nil
	if s.storeFaultHits(recs) {
		s.fired, s.stopped = true, true
		if s.fault.Kind == StoreLoseAck {
			s.durable = append(s.durable, recs...)
		}
		return false
	}
	s.durable = append(s.durable, recs...)
	return true
}

func (s *sim) storeFaultHits(recs []rec) bool {
	f := s.fault
	if f.Kind != StoreFail && f.Kind != StoreLoseAck {
		return false
	}
	for _, r := range recs {
		if r.step == f.Step && ((f.Target == AtModelResult && r.kind == kModelResult) || (f.Target == AtStepRecord && r.kind == kStep)) {
			return true
		}
	}
	return false
}

func (s *sim) all() []rec { return append(append([]rec(nil), s.durable...), s.pending...) }

func (s *sim) finishRecord() *rec {
	for i := range s.durable {
		if s.durable[i].kind == kFinished {
			return &s.durable[i]
		}
	}
	return nil
}

func (s *sim) finished() bool { return s.finishRecord() != nil }

// finish writes the finish with the totals of the log before it.
func (s *sim) finish(reason polyloop.StopReason) {
	s.add(rec{kind: kFinished, reason: reason, totals: totalsOf(s.all())})
	s.flush()
}

// fresh is a Run: the start, then the steps from the first.
func (s *sim) fresh() {
	s.add(rec{kind: kStarted})
	s.steps(1)
}

// steps runs steps from step `from` until the invocation ends.
func (s *sim) steps(from int) {
	for k := from; ; k++ {
		if reason := s.stopCheck(k); reason != "" {
			s.finish(reason)
			return
		}
		s.add(rec{kind: kModelIntent, step: k, attempt: 1})
		if !s.flush() || !s.model(k, 1) {
			return
		}
	}
}

// stopCheck applies the limits before step k, on the sums of what is
// known so far (SPEC §5).
func (s *sim) stopCheck(k int) polyloop.StopReason {
	var tokens int64
	var cost float64
	for _, r := range s.all() {
		if r.kind == kModelResult && r.usage != nil {
			tokens += r.usage.in + r.usage.out
			if r.usage.cost != nil {
				cost += *r.usage.cost
			}
		}
	}
	p := s.p
	switch {
	case p.MaxSteps > 0 && k > p.MaxSteps:
		return polyloop.StopMaxSteps
	case p.MaxTokens > 0 && tokens >= p.MaxTokens:
		return polyloop.StopTokenBudget
	case p.MaxCostUSD > 0 && cost >= p.MaxCostUSD:
		return polyloop.StopCostBudget
	}
	return ""
}

// model is the model call of step k, attempt a, and what follows from its
// answer; false when the invocation ended.
func (s *sim) model(k, a int) bool {
	if f := s.fault; k == f.Step && a == 1 && (f.Kind == CancelModel || f.Kind == ModelPanic) {
		s.fired, s.stopped = true, true
		return false
	}
	t := s.p.turn(k)
	in, out, cost := Usage(k, t.Pricing)
	u := &usage{in, out, cost}
	switch t.Kind {
	case TurnFail:
		s.add(rec{kind: kModelResult, step: k, attempt: a})
		s.finish(polyloop.StopLLMError)
		return false
	case TurnRefused, TurnBadArgs: // refused with what it consumed
		s.add(rec{kind: kModelResult, step: k, attempt: a, usage: u})
		s.finish(polyloop.StopLLMError)
		return false
	case TurnFinal:
		s.add(rec{kind: kModelResult, step: k, attempt: a, usage: u})
		s.add(rec{kind: kStep, step: k})
		s.finish(polyloop.StopCompleted)
		return false
	case TurnInvalid:
		s.add(rec{kind: kModelResult, step: k, attempt: a, usage: u})
		s.add(rec{kind: kStep, step: k})
		return true
	}
	s.add(rec{kind: kModelResult, step: k, attempt: a, usage: u})
	return s.batch(k, t.Tools, 0, 1)
}

// batch runs the actions of step k's batch from index from (its attempt
// att), then decides what the batch means for the run.
func (s *sim) batch(k int, tools []string, from, att int) bool {
	if s.p.Parallel {
		s.parallel(k, tools)
	} else {
		for i := from; i < len(tools); i++ {
			a := 1
			if i == from {
				a = att
			}
			s.add(rec{kind: kActionIntent, step: k, index: i, attempt: a, tool: tools[i]})
			if !s.flush() {
				return false
			}
			if f := s.fault; (f.Kind == CancelAction || f.Kind == ExecError || f.Kind == ExecPanic) && f.Step == k && f.Index == i {
				s.fired, s.stopped = true, true
				return false
			}
			s.add(settlement(k, i, tools[i], i == len(tools)-1))
		}
	}
	env, done := false, false
	for _, r := range s.all() {
		if r.step == k && r.act {
			env = env || r.status == polyloop.EnvError
			done = done || (r.status == polyloop.Executed && r.done)
		}
	}
	switch {
	case env:
		s.finish(polyloop.StopEnvError)
		return false
	case done:
		s.finish(polyloop.StopCompleted)
		return false
	}
	return true
}

// parallel is a batch whose actions run concurrently (no fault in such
// runs): every intent at once, then the outcomes, the last in the step
// record.
func (s *sim) parallel(k int, tools []string) {
	for i, t := range tools {
		s.add(rec{kind: kActionIntent, step: k, index: i, attempt: 1, tool: t})
	}
	s.flush()
	for i, t := range tools {
		s.add(settlement(k, i, t, i == len(tools)-1))
	}
}

// settlement is the outcome of a tool's action: an action result, or the
// step record for the last of the batch.
func settlement(k, i int, tool string, last bool) rec {
	r := rec{kind: kActionResult, step: k, index: i, act: true, tool: tool, status: polyloop.Executed}
	if last {
		r.kind = kStep
	}
	switch tool {
	case ToolDone:
		r.done = true
	case ToolBroken:
		r.status = polyloop.EnvError
	case ToolMissing:
		r.status = polyloop.NotExecuted
	}
	return r
}

// replaySafe is the replay policy the log records for a tool: the agent's
// tool spec, never_replay for a tool the agent does not have.
func replaySafe(tool string) bool {
	return tool == ToolOK || tool == ToolBroken || tool == ToolDone
}

// resume continues the durable log as PlanResume does.
func (s *sim) resume() {
	last := s.durable[len(s.durable)-1]
	switch last.kind {
	case kModelIntent: // a call of unknown outcome: called again
		s.add(rec{kind: kModelIntent, step: last.step, attempt: last.attempt + 1})
		if s.flush() && s.model(last.step, last.attempt+1) {
			s.steps(last.step + 1)
		}
	case kActionIntent: // an action of unknown outcome
		if !replaySafe(last.tool) {
			s.finish(polyloop.StopResumeStateUnknown)
			return
		}
		if s.batch(last.step, s.p.turn(last.step).Tools, last.index, last.attempt+1) {
			s.steps(last.step + 1)
		}
	default:
		panic(fmt.Sprintf("faultcampaign: a log that ends at a record of kind %d, which no plan leaves", last.kind))
	}
}

// totalsOf computes a log's totals by docs/log-format.md: steps are step
// records, model calls results, actions settlements; tokens and cost sum
// the usage the results recorded; an intent without its result is an
// execution of unknown outcome; the token sums are a lower bound when a
// model call's usage is not known (an orphaned intent, a result whose
// usage reports no tokens), the cost when the tokens are, a known usage
// has no cost, or a call failed without usage and no result carried a cost
// (no price is known).
func totalsOf(recs []rec) polyloop.Totals {
	var t polyloop.Totals
	intents, actIntents := 0, 0
	unbilledFailure, priced := false, false
	for _, r := range recs {
		switch r.kind {
		case kModelIntent:
			intents++
		case kModelResult:
			t.ModelCalls++
			u := r.usage
			if u == nil {
				unbilledFailure = true
				continue
			}
			t.InputTokens += u.in
			t.OutputTokens += u.out
			t.TokensUnknown = t.TokensUnknown || u.in+u.out == 0
			if u.cost != nil {
				t.CostUSD += *u.cost
				priced = true
			} else {
				t.CostUnknown = true
			}
		case kActionIntent:
			actIntents++
		case kActionResult:
			t.Actions++
		case kStep:
			t.Steps++
			if r.act {
				t.Actions++
			}
		}
	}
	t.UnknownModelCalls = intents - t.ModelCalls
	t.UnknownActions = actIntents - t.Actions
	t.TokensUnknown = t.TokensUnknown || t.UnknownModelCalls > 0
	t.CostUnknown = t.CostUnknown || t.TokensUnknown || (unbilledFailure && !priced)
	return t
}
