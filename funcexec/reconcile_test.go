package funcexec_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/funcexec"
	"github.com/polyloop/polyloop/polylooptest"
)

// ledger is a payment service keyed by idempotency key.
type ledger struct {
	mu      sync.Mutex
	charges map[string]string
}

type payArgs struct {
	Cents int `json:"cents"`
}

// payTools registers "pay", which charges under the action's key
// (polyloop.IdempotencyKeyFromContext), with a reconciler that looks the
// key up.
func payTools(t testing.TB) (*funcexec.Executor, *ledger) {
	l := &ledger{charges: map[string]string{}}
	ex := funcexec.New()
	funcexec.MustRegister(ex, "pay", "Charges.", polyloop.NeverReplay, func(ctx context.Context, a payArgs) (string, error) {
		key, ok := polyloop.IdempotencyKeyFromContext(ctx)
		if !ok {
			return "", errors.New("no idempotency key")
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if _, done := l.charges[key]; !done {
			l.charges[key] = "charged " + key
		}
		return l.charges[key], nil
	})
	if err := funcexec.SetReconciler(ex, "pay", func(_ context.Context, q polyloop.ReconcileQuery) (polyloop.Verdict, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if obs, ok := l.charges[q.Key]; ok {
			return polyloop.Verdict{Kind: polyloop.VerdictCompleted, Outcome: &polyloop.ActionOutcome{Status: polyloop.Executed, Observation: obs}}, nil
		}
		return polyloop.Verdict{Kind: polyloop.VerdictNotHappened}, nil
	}); err != nil {
		t.Fatal(err)
	}
	return ex, l
}

func TestSetReconcilerConformance(t *testing.T) {
	polylooptest.TestReconciler(t, polylooptest.ReconcilerHarness{
		New:    func(t testing.TB) polyloop.Reconciler { ex, _ := payTools(t); return ex },
		Action: polyloop.Action{CallID: "c1", Tool: "pay", Args: []byte(`{"cents":5}`)},
		Happen: func(t testing.TB, r polyloop.Reconciler, key string) {
			out, err := r.(*funcexec.Executor).Execute(polyloop.WithIdempotencyKey(context.Background(), key),
				polyloop.Action{CallID: "c1", Tool: "pay", Args: []byte(`{"cents":5}`)})
			if err != nil || out.Status != polyloop.Executed {
				t.Fatalf("pay: %+v, %v", out, err)
			}
		},
	})
}

// Only tools given a reconciler are reconciled; SetReconciler refuses an
// unknown tool.
func TestReconcilerScope(t *testing.T) {
	ex, _ := payTools(t)
	funcexec.MustRegister(ex, "send", "Sends.", polyloop.NeverReplay, func(context.Context, payArgs) (string, error) { return "sent", nil })
	if !ex.Reconciles(polyloop.Action{Tool: "pay"}) || ex.Reconciles(polyloop.Action{Tool: "send"}) || ex.Reconciles(polyloop.Action{Lang: "bash", Code: "ls"}) {
		t.Fatal("Reconciles names the wrong tools")
	}
	v, err := ex.Reconcile(context.Background(), polyloop.ReconcileQuery{Action: polyloop.Action{Tool: "send"}, Key: "k"})
	if err != nil || v.Kind != polyloop.VerdictUnknown {
		t.Fatalf("a tool without a reconciler: %+v, %v", v, err)
	}
	if err := funcexec.SetReconciler(ex, "nope", func(context.Context, polyloop.ReconcileQuery) (polyloop.Verdict, error) {
		return polyloop.Verdict{}, nil
	}); err == nil {
		t.Fatal("SetReconciler accepted an unknown tool")
	}
}
