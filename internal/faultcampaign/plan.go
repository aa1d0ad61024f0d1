// Package faultcampaign is a seeded campaign of agent runs with injected
// faults, for the tests that check that a run's accounting is honest
// (issue 14): stop reasons, totals, the executions of unknown outcome, and
// what polyloop stats and ls report over many runs.
//
// Each run follows a Plan: a script of model turns (batches of tool calls,
// invalid replies, final answers, model failures, replies refused with
// their usage, replies without usage or without a price), limits, one
// injected fault (a cancellation or an adapter error or panic while a model
// call or an action is in flight, a store that fails or loses the
// acknowledgement of a write, a cancellation before the first record) and
// whether the run is resumed after it. Run performs a plan against a store
// with this package's seams; Expect computes, from the plan alone, what the
// log must hold — by the rules of the design (SPEC §4, §5, §7.2, §12,
// design 0006, docs/log-format.md), never from what the program did.
package faultcampaign

import (
	"fmt"
	"math/rand/v2"
)

// TurnKind is what the model does at a step.
type TurnKind int

// The turns.
const (
	// TurnAct is a reply with one or more tool calls: a batch.
	TurnAct TurnKind = iota
	// TurnFinal is a text reply, the final answer.
	TurnFinal
	// TurnInvalid is a text reply the parser refuses.
	TurnInvalid
	// TurnFail is a model failure without usage (an error status).
	TurnFail
	// TurnRefused is a reply the client received and refused: a failure
	// carrying its usage (polyloop.UsageCarrier).
	TurnRefused
	// TurnBadArgs is a reply whose tool-call arguments are not JSON: the
	// library refuses it and keeps its usage.
	TurnBadArgs
)

// Pricing is what a reply's usage says.
type Pricing int

// The pricings.
const (
	// Priced: tokens and cost known.
	Priced Pricing = iota
	// Unpriced: tokens known, cost unknown.
	Unpriced
	// NoUsage: the reply reports no usage at all.
	NoUsage
)

// The tools of the campaign's agent, and one it does not have.
const (
	ToolOK      = "ok"      // replay_safe: executed
	ToolKeep    = "keep"    // never_replay: executed
	ToolBroken  = "broken"  // replay_safe: env_error
	ToolDone    = "done"    // replay_safe: executed, Done
	ToolMissing = "missing" // not the agent's: not_executed
)

// Turn is one scripted model turn.
type Turn struct {
	Kind    TurnKind
	Tools   []string // TurnAct: the batch's tools, in order
	Pricing Pricing  // the usage of a reply or refused reply
}

// FaultKind is the fault injected into a run's first invocation.
type FaultKind int

// The faults.
const (
	NoFault FaultKind = iota
	// CancelModel cancels the run's context while the model call of a
	// step is in flight; ModelPanic panics there.
	CancelModel
	ModelPanic
	// CancelAction cancels the context while an action is in flight;
	// ExecError returns an error from Execute (an adapter bug); ExecPanic
	// panics there.
	CancelAction
	ExecError
	ExecPanic
	// StoreFail fails the Append that holds a given record, writing
	// nothing; StoreLoseAck commits it, then fails (the acknowledgement
	// lost).
	StoreFail
	StoreLoseAck
	// CancelBeforeStart cancels the context before Run: nothing is
	// written, and a second Run with the same id starts the run.
	CancelBeforeStart
)

var faultNames = map[FaultKind]string{
	NoFault: "none", CancelModel: "cancel-model", ModelPanic: "model-panic", CancelAction: "cancel-action",
	ExecError: "exec-error", ExecPanic: "exec-panic", StoreFail: "store-fail", StoreLoseAck: "store-lose-ack",
	CancelBeforeStart: "cancel-before-start",
}

func (k FaultKind) String() string { return faultNames[k] }

// Target names the record whose Append a store fault hits.
type Target int

// The targets.
const (
	// AtModelResult is the Append holding the model result of the step.
	AtModelResult Target = iota
	// AtStepRecord is the Append holding the step record of the step.
	AtStepRecord
)

// Fault is the fault of a run's first invocation.
type Fault struct {
	Kind FaultKind
	// Step is the step it hits (1-based); Index the action of the batch
	// (0-based) for the action faults; Target the record for the store
	// faults.
	Step, Index int
	Target      Target
}

// Plan is one run of the campaign.
type Plan struct {
	RunID string
	// Agent is the run's agent name: the fault class, so that statistics
	// grouped by agent group by fault.
	Agent string
	Turns []Turn
	// Limits (0: none). MaxCostUSD is set only when the model is priced
	// (a budget that cannot be checked is refused).
	MaxSteps   int
	MaxTokens  int64
	MaxCostUSD float64
	// Priced: the model knows the cost of its calls (polyloop.CostReporter).
	Priced bool
	// Parallel runs each batch's actions concurrently (only in runs whose
	// fault does not depend on the order of completion).
	Parallel bool
	Fault    Fault
	// Resume: after a first invocation that did not finish, the run is
	// resumed once, with no fault.
	Resume bool
}

// Generate returns n plans from seed: the same seed, the same campaign.
func Generate(seed uint64, n int) []Plan {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	plans := make([]Plan, n)
	for i := range plans {
		plans[i] = generate(rng, i)
	}
	return plans
}

func generate(rng *rand.Rand, i int) Plan {
	p := Plan{RunID: fmt.Sprintf("camp-%04d", i), Priced: rng.IntN(4) != 0}
	n := 1 + rng.IntN(6)
	for range n {
		p.Turns = append(p.Turns, turn(rng, p.Priced))
	}
	p.Turns = append(p.Turns, Turn{Kind: TurnFinal, Pricing: pricing(rng, p.Priced)})
	if rng.IntN(3) != 0 {
		p.MaxSteps = 1 + rng.IntN(7)
	}
	if rng.IntN(4) == 0 {
		p.MaxTokens = int64(100 + rng.IntN(400))
	}
	if p.Priced && rng.IntN(4) == 0 {
		p.MaxCostUSD = float64(100+rng.IntN(500)) / costUnit
	}
	p.Fault = fault(rng, p)
	p.Parallel = p.Fault.Kind == NoFault && rng.IntN(3) == 0
	p.Resume = p.Fault.Kind != NoFault && rng.IntN(3) != 0
	p.Agent = "camp-" + p.Fault.Kind.String()
	return p
}

func turn(rng *rand.Rand, priced bool) Turn {
	t := Turn{Pricing: pricing(rng, priced)}
	switch r := rng.IntN(100); {
	case r < 65:
		t.Kind = TurnAct
		tools := []string{ToolOK, ToolOK, ToolOK, ToolOK, ToolKeep, ToolKeep, ToolKeep, ToolMissing, ToolMissing, ToolBroken, ToolDone}
		for range 1 + rng.IntN(3) {
			t.Tools = append(t.Tools, tools[rng.IntN(len(tools))])
		}
	case r < 80:
		t.Kind = TurnInvalid
	case r < 88:
		t.Kind = TurnFinal
	case r < 92:
		t.Kind = TurnFail
	case r < 96:
		t.Kind = TurnRefused
	default:
		t.Kind = TurnBadArgs
	}
	return t
}

// pricing is a reply's usage: mostly priced when the model is.
func pricing(rng *rand.Rand, priced bool) Pricing {
	switch r := rng.IntN(10); {
	case r == 0:
		return NoUsage
	case r == 1 || !priced:
		return Unpriced
	}
	return Priced
}

// fault picks a fault that can hit the plan: at a step its script reaches,
// at an action its batch has.
func fault(rng *rand.Rand, p Plan) Fault {
	kind := FaultKind(rng.IntN(int(CancelBeforeStart) + 1))
	// Early steps mostly: a run may end before a later one.
	f := Fault{Kind: kind, Step: 1 + rng.IntN(min(len(p.Turns), 1+rng.IntN(3))), Target: Target(rng.IntN(2))}
	switch kind {
	case CancelAction, ExecError, ExecPanic:
		var acts []int
		for i, t := range p.Turns {
			if t.Kind == TurnAct {
				acts = append(acts, i+1)
			}
		}
		if len(acts) == 0 {
			return Fault{Kind: NoFault}
		}
		f.Step = acts[rng.IntN(min(len(acts), 1+rng.IntN(2)))]
		f.Index = rng.IntN(len(p.Turns[f.Step-1].Tools))
	}
	return f
}

// costUnit makes every cost a multiple of 2^-20 USD, so that sums of costs
// are exact in float64 whatever their order: the campaign's expectations
// and the program's sums must agree to the last bit.
const costUnit = 1 << 20

// Usage is what the model reports for step's call with pricing p: input
// and output tokens, and a cost when priced.
func Usage(step int, p Pricing) (in, out int64, cost *float64) {
	if p == NoUsage {
		return 0, 0, nil
	}
	in, out = int64(100+3*step), int64(10+step%4)
	if p == Priced {
		c := float64(in+2*out) / costUnit
		cost = &c
	}
	return in, out, cost
}
