package polyloop

import (
	"context"
	"fmt"
)

// reconcile asks the executor's reconciler about each intent, one at a
// time, and feeds each answer to the machine; the answers are written with
// the next ready's records. A reconciler's error propagates untouched, as an
// executor's: nothing is recorded of this resume's answers, and the log stays
// at intent-without-outcome. A cancellation likewise.
func (d *driver) reconcile(ctx context.Context, intents []*ActionIntent) error {
	rec, ok := d.r.Executor.(Reconciler)
	if !ok {
		panic("polyloop: internal error: a reconcile effect without a reconciler")
	}
	for _, in := range intents {
		if err := ctx.Err(); err != nil {
			return d.keepFacts(ctx, err) // the answers already given are facts: written, not asked again
		}
		q := ReconcileQuery{RunID: d.runID, Step: in.Step, ActionID: in.ActionID, Attempt: in.Attempt,
			Action: cloneAction(in.Action), Key: in.key(d.runID)}
		v, err := rec.Reconcile(ctx, q)
		if err != nil {
			return fmt.Errorf("reconciling action %s: %w", in.ActionID, err)
		}
		if err := d.m.reconciled(in, v); err != nil {
			return err
		}
		if v.Outcome != nil {
			d.noteAudit(in, *v.Outcome)
		}
	}
	return nil
}

// cloneAction copies an action, so that a reconciler cannot change the
// log's.
func cloneAction(a Action) Action {
	a.Args = append([]byte(nil), a.Args...)
	return a
}
