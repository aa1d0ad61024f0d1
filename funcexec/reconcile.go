package funcexec

import (
	"context"
	"fmt"

	"github.com/polyloop/polyloop"
)

var _ polyloop.Reconciler = (*Executor)(nil)

// SetReconciler gives the registered tool name a reconciler: asked on
// resume, when an action of the tool (never_replay) has an intent and no
// outcome, whether it happened (see polyloop.Reconciler for the contract).
// fn typically looks the action up by its key (q.Key, the key the tool got
// from polyloop.IdempotencyKeyFromContext) in the system the tool acted on.
// It fails for an unknown tool or a nil fn.
func SetReconciler(e *Executor, name string, fn func(ctx context.Context, q polyloop.ReconcileQuery) (polyloop.Verdict, error)) error {
	if fn == nil {
		return fmt.Errorf("funcexec: tool %q: reconciler is nil", name)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	t, ok := e.tools[name]
	if !ok {
		return fmt.Errorf("funcexec: no tool %q to reconcile", name)
	}
	c := *t // a tool is immutable once registered: replace it
	c.reconcile = fn
	e.tools[name] = &c
	return nil
}

// Reconcile implements polyloop.Reconciler: the answer of the action's
// tool's reconciler, or VerdictUnknown for a tool without one (and for a
// code action or an unknown tool, which never ran here).
func (e *Executor) Reconcile(ctx context.Context, q polyloop.ReconcileQuery) (polyloop.Verdict, error) {
	if err := ctx.Err(); err != nil {
		return polyloop.Verdict{}, fmt.Errorf("funcexec: %w", err)
	}
	t, ok := e.lookup(q.Action.Tool)
	if q.Action.IsCode() || !ok || t.reconcile == nil {
		return polyloop.Verdict{Kind: polyloop.VerdictUnknown, Said: fmt.Sprintf("tool %q has no reconciler", q.Action.Tool)}, nil
	}
	v, err := t.reconcile(ctx, q)
	if err != nil {
		return v, fmt.Errorf("funcexec: tool %q: reconcile: %w", q.Action.Tool, err)
	}
	if v.Outcome != nil && v.Outcome.Status == polyloop.Executed {
		o := bound(*v.Outcome)
		v.Outcome = &o
	}
	return v, nil
}

var _ polyloop.ReconcileScope = (*Executor)(nil)

// Reconciles implements polyloop.ReconcileScope: the tools given a
// reconciler (SetReconciler).
func (e *Executor) Reconciles(a polyloop.Action) bool {
	t, ok := e.lookup(a.Tool)
	return ok && !a.IsCode() && t.reconcile != nil
}
