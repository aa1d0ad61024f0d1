package faultcampaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/polyloop/polyloop"
)

// ErrInjected is the error of every injected adapter failure.
var ErrInjected = errors.New("faultcampaign: injected fault")

// Agent is the plan's agent: its tools (not the missing one), its limits,
// its model parameters.
func Agent(p Plan) polyloop.Agent {
	obj := json.RawMessage(`{"type":"object"}`)
	return polyloop.Agent{
		Name: p.Agent, System: "You act.",
		Tools: []polyloop.ToolSpec{
			{Name: ToolOK, Parameters: obj, Replay: polyloop.ReplaySafe},
			{Name: ToolKeep, Parameters: obj, Replay: polyloop.NeverReplay},
			{Name: ToolBroken, Parameters: obj, Replay: polyloop.ReplaySafe},
			{Name: ToolDone, Parameters: obj, Replay: polyloop.ReplaySafe},
		},
		Limits:          polyloop.Limits{MaxSteps: p.MaxSteps, MaxTokens: p.MaxTokens, MaxCostUSD: p.MaxCostUSD},
		Model:           polyloop.ModelParams{Model: "campaign"},
		ParallelActions: p.Parallel,
	}
}

// invocation is what the seams of one invocation share: the fault to
// inject (none on a resume) and the cancellation of the invocation's
// context.
type invocation struct {
	plan   *Plan
	fault  Fault
	cancel context.CancelFunc
}

// Model answers the plan's turns: step n gets turn n (the final answer
// past the script), whatever the attempt, as a deterministic model would.
type Model struct{ inv *invocation }

// refused is the error of a reply the client received and refused.
type refused struct{ u polyloop.Usage }

func (refused) Error() string               { return "faultcampaign: reply refused" }
func (e refused) CallUsage() polyloop.Usage { return e.u }

// Complete implements polyloop.ModelClient.
func (m Model) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	f := m.inv.fault
	if req.Step == f.Step && isAttemptOne(req.CallID) {
		switch f.Kind {
		case CancelModel:
			m.inv.cancel()
			return polyloop.ModelReply{}, fmt.Errorf("faultcampaign: model call: %w", ctx.Err())
		case ModelPanic:
			panic("faultcampaign: injected model panic")
		}
	}
	t := m.inv.plan.turn(req.Step)
	in, out, cost := Usage(req.Step, t.Pricing)
	u := polyloop.Usage{InputTokens: in, OutputTokens: out, CostUSD: cost}
	reply := polyloop.ModelReply{Usage: u, Model: "campaign", Attempts: 1}
	switch t.Kind {
	case TurnFail:
		return polyloop.ModelReply{}, errors.New("faultcampaign: HTTP 503")
	case TurnRefused:
		return polyloop.ModelReply{}, refused{u}
	case TurnBadArgs:
		reply.ToolCalls = []polyloop.ToolCall{{ID: "c", Name: ToolOK, Args: json.RawMessage(`{not json`)}}
	case TurnFinal:
		reply.Text = "final"
	case TurnInvalid:
		reply.Text = "invalid"
	case TurnAct:
		for i, tool := range t.Tools {
			reply.ToolCalls = append(reply.ToolCalls, polyloop.ToolCall{ID: fmt.Sprintf("c%d.%d", req.Step, i), Name: tool, Args: json.RawMessage(`{}`)})
		}
	}
	return reply, nil
}

// isAttemptOne reports whether a call id ("m3.1") is a step's first attempt.
func isAttemptOne(callID string) bool { return strings.HasSuffix(callID, ".1") }

// KnowsCost implements polyloop.CostReporter.
func (m Model) KnowsCost(polyloop.ModelParams) bool { return m.inv.plan.Priced }

// Describe implements polyloop.Describer: the same for every invocation,
// fault or not, so that a resume sees the snapshot of the run.
func (Model) Describe() polyloop.Component { return polyloop.Component{Name: "faultcampaign.Model"} }

func (p *Plan) turn(step int) Turn {
	if step > len(p.Turns) {
		return Turn{Kind: TurnFinal}
	}
	return p.Turns[step-1]
}

// Parser makes each tool call an action of a batch; "final" is the final
// answer, anything else Invalid.
type Parser struct{}

// Parse implements polyloop.DecisionParser.
func (Parser) Parse(r polyloop.ModelReply) polyloop.Decision {
	if len(r.ToolCalls) > 0 {
		var act polyloop.Act
		for _, c := range r.ToolCalls {
			act.Actions = append(act.Actions, polyloop.Action{CallID: c.ID, Tool: c.Name, Args: c.Args})
		}
		return act
	}
	if r.Text == "final" {
		return polyloop.Final{Answer: "final"}
	}
	return polyloop.Invalid{Feedback: "not understood"}
}

// Describe implements polyloop.Describer.
func (Parser) Describe() polyloop.Component { return polyloop.Component{Name: "faultcampaign.Parser"} }

// Executor runs the campaign's tools and injects the action faults of the
// first invocation.
type Executor struct{ inv *invocation }

// Execute implements polyloop.ActionExecutor.
func (x Executor) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	if f := x.inv.fault; x.inv.hits(a) {
		switch f.Kind {
		case CancelAction:
			x.inv.cancel()
			return polyloop.ActionOutcome{}, fmt.Errorf("faultcampaign: action: %w", ctx.Err())
		case ExecError:
			return polyloop.ActionOutcome{}, fmt.Errorf("faultcampaign: executor bug: %w", ErrInjected)
		case ExecPanic:
			panic("faultcampaign: injected executor panic")
		}
	}
	switch a.Tool {
	case ToolOK, ToolKeep:
		return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "ok"}, nil
	case ToolDone:
		return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "done", Done: true}, nil
	case ToolBroken:
		return polyloop.ActionOutcome{Status: polyloop.EnvError, Observation: "connection closed"}, nil
	}
	return polyloop.ActionOutcome{Status: polyloop.NotExecuted, Observation: fmt.Sprintf("unknown tool %q", a.Tool)}, nil
}

// Describe implements polyloop.Describer.
func (Executor) Describe() polyloop.Component {
	return polyloop.Component{Name: "faultcampaign.Executor"}
}

// hits reports whether the action is the one an action fault targets: its
// call id names the step and index ("c3.1").
func (inv *invocation) hits(a polyloop.Action) bool {
	f := inv.fault
	return (f.Kind == CancelAction || f.Kind == ExecError || f.Kind == ExecPanic) && a.CallID == fmt.Sprintf("c%d.%d", f.Step, f.Index)
}

// faultyStore fails the Append that holds the fault's target record:
// before it commits (StoreFail) or after (StoreLoseAck). Every Append after
// it fails too: the invocation's store is gone.
type faultyStore struct {
	polyloop.Store
	fault Fault

	mu     sync.Mutex
	failed bool
}

// errStore is the store fault's error.
var errStore = fmt.Errorf("faultcampaign: store failure: %w", ErrInjected)

// Append implements polyloop.Store.
func (s *faultyStore) Append(ctx context.Context, runID string, recs []polyloop.Row) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed {
		return errStore
	}
	if !s.holdsTarget(recs) {
		return s.Store.Append(ctx, runID, recs)
	}
	s.failed = true
	if s.fault.Kind == StoreLoseAck {
		if err := s.Store.Append(ctx, runID, recs); err != nil {
			return err
		}
	}
	return errStore
}

func (s *faultyStore) holdsTarget(rows []polyloop.Row) bool {
	for _, r := range rows {
		switch b := r.Record.Body.(type) {
		case *polyloop.ModelCallResult:
			if s.fault.Target == AtModelResult && b.Step == s.fault.Step {
				return true
			}
		case *polyloop.StepCompleted:
			if s.fault.Target == AtStepRecord && b.Step == s.fault.Step {
				return true
			}
		}
	}
	return false
}
