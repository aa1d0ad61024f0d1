package polyloop

import (
	"context"
	"errors"
	"fmt"
)

// execute runs the actions the machine handed out and returns the machine's
// next ready once none is in flight. One action runs in the caller's
// goroutine, so that a panic reaches the caller's stack as it happens.
// Several (a batch whose snapshot allows parallel actions) run in their own
// goroutines; each outcome is made durable as soon as it is known, so a crash
// loses at most the actions still in flight; an error or a panic of one
// action is returned (a panic re-raised) only once every other action of the
// batch has returned and its outcome has been recorded.
func (d *driver) execute(ctx context.Context, intents []*ActionIntent) (ready, error) {
	if len(intents) == 1 {
		out, err := d.executeOne(ctx, intents[0])
		if err != nil {
			return ready{}, err
		}
		d.tickFact()
		env, err := d.envAfter(ctx, &out)
		if err != nil {
			return ready{}, err
		}
		if err := d.m.actionDoneEnv(intents[0].Index, out, env); err != nil {
			return ready{}, err
		}
		d.noteAudit(intents[0], out)
		return d.next(), nil
	}
	return d.executeParallel(ctx, intents)
}

// executeOne executes one action in the action's context (ActionFromContext,
// InvokeChild). An executor error or panic propagates and leaves the log at
// intent-without-outcome.
func (d *driver) executeOne(ctx context.Context, in *ActionIntent) (ActionOutcome, error) {
	actx, scope := withAction(ctx, d, in)
	out, err := d.r.Executor.Execute(actx, in.Action)
	if n := scope.close(); n > 0 && err == nil {
		// A child is still being received: its reception would land after
		// the action's outcome. The action's state is unknown, as after an
		// error.
		return out, fmt.Errorf("%w: action %s returned while %d child run(s) it started were still being received", ErrNotInAction, in.ActionID, n)
	}
	return out, err
}

func (d *driver) noteAudit(in *ActionIntent, out ActionOutcome) {
	if len(d.r.Sinks) == 0 {
		return
	}
	if d.audit == nil {
		d.audit = map[string]*ActionOutcome{}
	}
	kept := out // out itself stays on the stack when no sink listens
	d.audit[in.ActionID] = &kept
}

type actionReturn struct {
	in    *ActionIntent
	out   ActionOutcome
	err   error
	panic any
}

func (d *driver) executeParallel(ctx context.Context, intents []*ActionIntent) (ready, error) {
	results := make(chan actionReturn, len(intents))
	for _, in := range intents {
		go func() {
			ret := actionReturn{in: in}
			defer func() {
				if p := recover(); p != nil {
					ret.panic = p
				}
				results <- ret
			}()
			ret.out, ret.err = d.executeOne(ctx, in)
		}()
	}
	var next ready
	var errs []error
	var panicked []any
	for range intents {
		ret := <-results
		switch {
		case ret.panic != nil:
			panicked = append(panicked, ret.panic)
			continue
		case ret.err != nil:
			errs = append(errs, ret.err)
			continue
		}
		rd, err := d.settleOutcome(ctx, ret)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		next = rd
	}
	if len(panicked) > 0 {
		panic(panicked[0])
	}
	if len(errs) > 0 {
		return ready{}, errors.Join(errs...)
	}
	return next, nil
}

// settleOutcome feeds one outcome of a parallel batch and writes what the
// machine settled at once. It returns the machine's next ready once the
// batch is complete (a ready that waits, while actions are in flight).
func (d *driver) settleOutcome(ctx context.Context, ret actionReturn) (ready, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tickFact()
	if err := d.m.actionDone(ret.in.Index, ret.out); err != nil {
		return ready{}, err
	}
	d.noteAudit(ret.in, ret.out)
	rd := d.next()
	if rd.effect.kind != effectWait {
		return rd, nil
	}
	return rd, d.settle(ctx, rd.records)
}
