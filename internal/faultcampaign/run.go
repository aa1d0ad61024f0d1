package faultcampaign

import (
	"context"
	"errors"
	"fmt"

	"github.com/polyloop/polyloop"
)

// Outcome is what performing a plan gave: the error (or panic) of each
// invocation, and the result of the last one when it returned one.
type Outcome struct {
	// First and Second are the invocations' errors (a panic as an error
	// wrapping errPanicked); Second is nil when there was no second.
	First, Second error
	Resumed       bool
	// Result is the last invocation's result when it returned no error.
	Result *polyloop.RunResult
}

// errPanicked marks an invocation that panicked.
var errPanicked = errors.New("faultcampaign: the invocation panicked")

// Task is the campaign's task.
var Task = polyloop.Task{Input: "do the plan"}

// Run performs a plan on st: the first invocation with the plan's fault,
// then — when the plan says so and the run did not finish — a resume
// without fault (after CancelBeforeStart, a second Run, since nothing was
// written).
func Run(ctx context.Context, st polyloop.Store, p Plan) Outcome {
	var out Outcome
	res, err := invoke(ctx, st, &p, p.Fault, false)
	out.First = err
	if err == nil {
		out.Result = &res
	}
	again := p.Fault.Kind == CancelBeforeStart || (err != nil && p.Resume)
	if !again {
		return out
	}
	out.Resumed = p.Fault.Kind != CancelBeforeStart
	res, err = invoke(ctx, st, &p, Fault{}, out.Resumed)
	out.Second, out.Result = err, nil
	if err == nil {
		out.Result = &res
	}
	return out
}

// invoke makes one invocation: Run, or Resume, with fault injected.
func invoke(parent context.Context, st polyloop.Store, p *Plan, fault Fault, resume bool) (res polyloop.RunResult, err error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	inv := &invocation{plan: p, fault: fault, cancel: cancel}
	store := st
	switch fault.Kind {
	case StoreFail, StoreLoseAck:
		store = &faultyStore{Store: st, fault: fault}
	case CancelBeforeStart:
		cancel()
	}
	r := &polyloop.Runner{Model: Model{inv}, Parser: Parser{}, Executor: Executor{inv}, Store: store}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: %v", errPanicked, v)
		}
	}()
	if resume {
		return r.Resume(ctx, p.RunID, Agent(*p))
	}
	return r.Run(ctx, p.RunID, Agent(*p), Task)
}

// CheckErrors says what is wrong with the errors of an outcome, given the
// plan: a fault that fired must surface as its own kind of error (a
// cancellation as context.Canceled, a store failure as a
// *polyloop.PersistenceError, an adapter bug as itself, a panic as a
// panic), and an invocation without a fault that fired must return none.
// fired says whether the expected log shows the fault was reached.
func CheckErrors(p Plan, o Outcome, fired bool) error {
	if err := checkFirst(p, o.First, fired); err != nil {
		return err
	}
	if o.Second != nil {
		return fmt.Errorf("the second invocation failed: %w", o.Second)
	}
	return nil
}

func checkFirst(p Plan, err error, fired bool) error {
	if !fired {
		if err != nil {
			return fmt.Errorf("the fault %s did not fire, yet the first invocation failed: %w", p.Fault.Kind, err)
		}
		return nil
	}
	var pe *polyloop.PersistenceError
	ok := false
	switch p.Fault.Kind {
	case CancelModel, CancelAction:
		ok = errors.Is(err, context.Canceled)
	case CancelBeforeStart:
		ok = errors.Is(err, context.Canceled) && errors.Is(err, polyloop.ErrRunNotStarted)
	case ModelPanic, ExecPanic:
		ok = errors.Is(err, errPanicked)
	case ExecError:
		ok = errors.Is(err, ErrInjected) && !errors.As(err, &pe)
	case StoreFail, StoreLoseAck:
		ok = errors.As(err, &pe) && errors.Is(err, ErrInjected)
	}
	if !ok {
		return fmt.Errorf("the fault %s fired; the first invocation returned %v", p.Fault.Kind, err)
	}
	return nil
}
