package polylooptest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/polyloop/polyloop"
)

// goodReconciler asks an in-memory payment table keyed by idempotency key.
type goodReconciler struct {
	mu      sync.Mutex
	charged map[string]bool
}

func (g *goodReconciler) charge(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.charged[key] = true
}

func (g *goodReconciler) Reconcile(ctx context.Context, q polyloop.ReconcileQuery) (polyloop.Verdict, error) {
	if err := ctx.Err(); err != nil {
		return polyloop.Verdict{}, fmt.Errorf("goodReconciler: %w", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.charged[q.Key] {
		return polyloop.Verdict{Kind: polyloop.VerdictCompleted, Said: "charge found",
			Outcome: &polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "charged " + q.Key}}, nil
	}
	return polyloop.Verdict{Kind: polyloop.VerdictNotHappened, Said: "no charge under the key"}, nil
}

func goodReconcilerHarness() ReconcilerHarness {
	return ReconcilerHarness{
		New:    func(testing.TB) polyloop.Reconciler { return &goodReconciler{charged: map[string]bool{}} },
		Action: polyloop.Action{CallID: "c1", Tool: "pay", Args: json.RawMessage(`{"cents":100}`)},
		Happen: func(_ testing.TB, r polyloop.Reconciler, key string) { unwrapGood(r).charge(key) },
	}
}

// unwrapGood finds the good reconciler under a broken one.
func unwrapGood(r polyloop.Reconciler) *goodReconciler {
	switch r := r.(type) {
	case *goodReconciler:
		return r
	case *brokenReconciler:
		return r.good
	}
	panic("polylooptest: not a test reconciler")
}

// brokenReconciler answers what broken says, when it says it handled the
// query; the good reconciler's answer otherwise.
type brokenReconciler struct {
	good   *goodReconciler
	broken func(ctx context.Context, q *polyloop.ReconcileQuery, good polyloop.Verdict) (polyloop.Verdict, error)
}

func (b *brokenReconciler) Reconcile(ctx context.Context, q polyloop.ReconcileQuery) (polyloop.Verdict, error) {
	v, err := b.good.Reconcile(context.WithoutCancel(ctx), q)
	if err != nil {
		return v, err
	}
	return b.broken(ctx, &q, v)
}

func reconcilerBroken(f func(ctx context.Context, q *polyloop.ReconcileQuery, good polyloop.Verdict) (polyloop.Verdict, error)) ReconcilerHarness {
	h := goodReconcilerHarness()
	h.New = func(testing.TB) polyloop.Reconciler {
		return &brokenReconciler{good: &goodReconciler{charged: map[string]bool{}}, broken: f}
	}
	return h
}

func TestGoodReconcilerPasses(t *testing.T) {
	TestReconciler(t, goodReconcilerHarness())
}

func brokenReconcilerCases() []brokenCase {
	c := func(check string, r rule, h ReconcilerHarness) brokenCase {
		return brokenCase{"Reconciler", check, r, func(t *testing.T) outcome {
			return runNamed(t, reconcilerChecks, check, h, newSettings(h.Timeout, h.CancelWithin, nil))
		}}
	}
	always := func(v polyloop.Verdict) ReconcilerHarness {
		return reconcilerBroken(func(context.Context, *polyloop.ReconcileQuery, polyloop.Verdict) (polyloop.Verdict, error) {
			return v, nil
		})
	}
	completed := polyloop.Verdict{Kind: polyloop.VerdictCompleted, Outcome: &polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "ok"}}
	var mu sync.Mutex
	asked := map[string]int{}
	return []brokenCase{
		// Never finds what happened.
		c("Completed", ruleReconcileFinds, always(polyloop.Verdict{Kind: polyloop.VerdictUnknown})),
		// Says everything happened.
		c("NeverHappened", ruleReconcileNoInvent, always(completed)),
		// "completed" without an outcome, or with one that did not run.
		c("Shape", ruleVerdictShape, reconcilerBroken(func(_ context.Context, _ *polyloop.ReconcileQuery, v polyloop.Verdict) (polyloop.Verdict, error) {
			v.Outcome = nil
			return v, nil
		})),
		c("Completed", ruleVerdictShape, reconcilerBroken(func(_ context.Context, _ *polyloop.ReconcileQuery, v polyloop.Verdict) (polyloop.Verdict, error) {
			if v.Outcome != nil {
				v.Outcome.Status = polyloop.NotExecuted
			}
			return v, nil
		})),
		c("Shape", ruleVerdictShape, always(polyloop.Verdict{Kind: "maybe"})),
		// Asking makes it happen: the first answer is "not happened", every
		// later one "completed".
		c("Stable", ruleReconcileStable, reconcilerBroken(func(_ context.Context, q *polyloop.ReconcileQuery, v polyloop.Verdict) (polyloop.Verdict, error) {
			mu.Lock()
			defer mu.Unlock()
			asked[q.Key]++
			if asked[q.Key] > 1 {
				return completed, nil
			}
			return v, nil
		})),
		// Rewrites the caller's arguments.
		c("QueryNotModified", ruleQueryNotModified, reconcilerBroken(func(_ context.Context, q *polyloop.ReconcileQuery, v polyloop.Verdict) (polyloop.Verdict, error) {
			if len(q.Action.Args) > 1 {
				q.Action.Args[1] = 'X'
			}
			return v, nil
		})),
		// Ignores its context.
		c("CancelledContext", ruleCancelError, reconcilerBroken(func(_ context.Context, _ *polyloop.ReconcileQuery, v polyloop.Verdict) (polyloop.Verdict, error) {
			return v, nil
		})),
	}
}
