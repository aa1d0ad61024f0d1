package polylooptest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// ReconcilerHarness tells TestReconciler how to drive a polyloop.Reconciler.
// Every field but Timeout and CancelWithin is required.
type ReconcilerHarness struct {
	// New returns a fresh reconciler, with the world it asks (a fake
	// service, a table) empty. It is called once per subtest.
	New func(t testing.TB) polyloop.Reconciler
	// Action is an action of a tool the reconciler answers for.
	Action polyloop.Action
	// Happen makes Action's effect happen in the world under key, as if
	// Execute had run it and its reply had been lost (a crash after the
	// service committed): the reconciler made by New must then find it.
	Happen func(t testing.TB, r polyloop.Reconciler, key string)
	// Timeout is the watchdog of each subtest (DefaultTimeout when zero);
	// CancelWithin how soon a call must return once its context is done.
	Timeout      time.Duration
	CancelWithin time.Duration
}

// The rules of Reconciler.
const (
	ruleReconcileFinds    rule = "an effect that happened under the key MUST be answered completed, with its outcome (Executed or EnvError)"
	ruleReconcileNoInvent rule = "an effect that never happened MUST NOT be answered completed"
	ruleVerdictShape      rule = "a verdict MUST be completed (with an outcome), not_happened or unknown (without one)"
	ruleReconcileStable   rule = "asking again MUST give the same answer: asking has no effect"
	ruleQueryNotModified  rule = "Reconcile MUST NOT modify the query's action"
)

var reconcileRules = []rule{ruleReconcileFinds, ruleReconcileNoInvent, ruleVerdictShape, ruleReconcileStable,
	ruleQueryNotModified}

// TestReconciler checks that the reconcilers made by h honour the
// polyloop.Reconciler contract (SPEC §14). Run it with -race.
//
// The checks (subtest names):
//   - Completed: after Happen under a key, the verdict is completed with
//     an outcome Executed or EnvError.
//   - NeverHappened: for a key never used, the verdict is not_happened or
//     unknown, never completed.
//   - Shape: every verdict is one of the three, with an outcome exactly
//     when completed (the library refuses others with
//     polyloop.ErrInvalidVerdict).
//   - Stable: asking twice gives the same verdict, and asking does not
//     make the effect happen.
//   - QueryNotModified: the action's arguments are left as they were.
//   - CancelledContext: a done context gives an error that errors.Is it,
//     promptly.
//
// What the kit cannot assert: that "not_happened" is final (no request in
// flight can still land under the key). That is the reconciler's own
// knowledge of its service; when in doubt it answers unknown.
func TestReconciler(t *testing.T, h ReconcilerHarness) {
	t.Helper()
	if h.New == nil || h.Happen == nil || isZeroAction(h.Action) {
		t.Fatal("polylooptest: ReconcilerHarness.New, Action and Happen are required")
	}
	runSuite(t, "Reconciler", h, newSettings(h.Timeout, h.CancelWithin, nil), reconcilerChecks)
}

var reconcilerChecks = []check[ReconcilerHarness]{
	{"Completed", checkReconcileCompleted},
	{"NeverHappened", checkReconcileNeverHappened},
	{"Shape", checkReconcileShape},
	{"Stable", checkReconcileStable},
	{"QueryNotModified", checkReconcileQueryNotModified},
	{"CancelledContext", checkReconcileCancelled},
}

// kitKey is a key of the kit's, unique per use.
func kitKey(e *env, n string) string {
	return polyloop.IdempotencyKeyFor("polylooptest/"+e.t.Name(), "a1", len(n)+1) + n
}

func (h ReconcilerHarness) query(key string) polyloop.ReconcileQuery {
	a := h.Action
	a.Args = append([]byte(nil), a.Args...)
	return polyloop.ReconcileQuery{RunID: "polylooptest", Step: 1, ActionID: "a1", Attempt: 1, Action: a, Key: key}
}

// ask asks r and checks the verdict's shape.
func ask(e *env, r polyloop.Reconciler, q polyloop.ReconcileQuery) (polyloop.Verdict, error) {
	v, err := r.Reconcile(e.ctx, q)
	if err != nil {
		return v, fmt.Errorf("Reconcile of key %s: %w", q.Key, err)
	}
	switch v.Kind {
	case polyloop.VerdictNotHappened, polyloop.VerdictUnknown:
		if v.Outcome != nil {
			return v, broke(ruleVerdictShape, "verdict %s with an outcome %+v", v.Kind, *v.Outcome)
		}
	case polyloop.VerdictCompleted:
		if v.Outcome == nil {
			return v, broke(ruleVerdictShape, "verdict completed without an outcome")
		}
		if s := v.Outcome.Status; s != polyloop.Executed && s != polyloop.EnvError {
			return v, broke(ruleVerdictShape, "verdict completed with status %q", s)
		}
	default:
		return v, broke(ruleVerdictShape, "verdict %q", v.Kind)
	}
	return v, nil
}

func checkReconcileCompleted(e *env, h ReconcilerHarness) error {
	r := h.New(e.t)
	key := kitKey(e, "-done")
	h.Happen(e.t, r, key)
	v, err := ask(e, r, h.query(key))
	if err != nil {
		return err
	}
	if v.Kind != polyloop.VerdictCompleted {
		return broke(ruleReconcileFinds, "after Happen under %s the verdict is %s (%q)", key, v.Kind, v.Said)
	}
	return nil
}

func checkReconcileNeverHappened(e *env, h ReconcilerHarness) error {
	r := h.New(e.t)
	h.Happen(e.t, r, kitKey(e, "-other")) // another key's effect is not this one's
	v, err := ask(e, r, h.query(kitKey(e, "-never")))
	if err != nil {
		return err
	}
	if v.Kind == polyloop.VerdictCompleted {
		return broke(ruleReconcileNoInvent, "a key never used is answered completed (%q)", v.Said)
	}
	return nil
}

func checkReconcileShape(e *env, h ReconcilerHarness) error {
	r := h.New(e.t)
	key := kitKey(e, "-shape")
	if _, err := ask(e, r, h.query(key)); err != nil {
		return err
	}
	h.Happen(e.t, r, key)
	_, err := ask(e, r, h.query(key))
	return err
}

func checkReconcileStable(e *env, h ReconcilerHarness) error {
	r := h.New(e.t)
	never, done := kitKey(e, "-never"), kitKey(e, "-done")
	h.Happen(e.t, r, done)
	for _, key := range []string{never, done} {
		v1, err := ask(e, r, h.query(key))
		if err != nil {
			return err
		}
		v2, err := ask(e, r, h.query(key))
		if err != nil {
			return err
		}
		if v1.Kind != v2.Kind {
			return broke(ruleReconcileStable, "key %s answered %s, then %s", key, v1.Kind, v2.Kind)
		}
	}
	v, err := ask(e, r, h.query(never))
	if err != nil {
		return err
	}
	if v.Kind == polyloop.VerdictCompleted {
		return broke(ruleReconcileStable, "asking about a key never used made its effect happen")
	}
	return nil
}

func checkReconcileQueryNotModified(e *env, h ReconcilerHarness) error {
	r := h.New(e.t)
	key := kitKey(e, "-q")
	h.Happen(e.t, r, key)
	q := h.query(key)
	before := h.query(key)
	if _, err := ask(e, r, q); err != nil {
		return err
	}
	if !q.Action.Equal(before.Action) || string(q.Action.Args) != string(before.Action.Args) || q.Key != before.Key {
		return broke(ruleQueryNotModified, "the query's action became %s", cutJSON(q.Action))
	}
	return nil
}

func checkReconcileCancelled(e *env, h ReconcilerHarness) error {
	r := h.New(e.t)
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	err := returnsPromptly(e, func() error {
		_, err := r.Reconcile(ctx, h.query(kitKey(e, "-c")))
		return err
	})
	return cancelError(err, context.Canceled, "Reconcile with a cancelled context")
}
