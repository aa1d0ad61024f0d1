package polyloop_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/polylooptest"
)

// cancelAt cancels the run's context at the k-th seam call (model or
// executor, counted together), after that call has done its work: the
// cancellation arrives just after a side effect happened.
type cancelAt struct {
	k      int32
	n      atomic.Int32
	cancel context.CancelFunc
}

func (c *cancelAt) tick() {
	if c.n.Add(1) == c.k {
		c.cancel()
	}
}

type cancelModel struct {
	*cancelAt
	inner polyloop.ModelClient
}

func (m cancelModel) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	reply, err := m.inner.Complete(ctx, req)
	m.tick()
	return reply, err
}

type cancelExec struct {
	*cancelAt
	inner polyloop.ActionExecutor
}

func (e cancelExec) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	out, err := e.inner.Execute(ctx, a)
	e.tick()
	return out, err
}

// SPEC §5, §7.3: a cancellation that arrives after a model call or an action
// returned does not lose what happened: the result and the step record are
// written, so a resumed run neither pays for the call again nor repeats the
// action. Every seam call of the reference run is tried as the cancel point.
func TestCancellationKeepsFacts(t *testing.T) {
	ref := referenceLog(t)
	tot := polyloop.ComputeTotals(ref)
	seamCalls := int32(tot.ModelCalls + tot.Actions) // every model call and every action of the reference run
	for k := int32(1); k <= seamCalls; k++ {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			store := memstore.New()
			exec := newTestExec()
			model := referenceScript()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			c := &cancelAt{k: k, cancel: cancel}
			r := newRunner(cancelModel{c, model}, store, cancelExec{c, exec})
			res, err := r.Run(ctx, "ref", equivalenceAgent(), polyloop.Task{Input: "reference task"})
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Fatalf("Run: %v", err)
			}
			var pe *polyloop.PersistenceError
			if errors.As(err, &pe) {
				t.Fatalf("cancellation surfaced as a store failure: %v", err)
			}
			if err == nil && res.StopReason != polyloop.StopCompleted {
				t.Fatalf("Run finished %s", res.StopReason)
			}
			callsBefore := model.Calls()
			if err != nil {
				// Nothing new started after the cancellation: every intent
				// written so far belongs to a call or an action that ran.
				log, _ := polyloop.ReadLog(context.Background(), store, "ref")
				intents, actions := 0, len(log.ActionIntents())
				for _, rec := range log.Records {
					if rec.Kind() == polyloop.KindModelCallIntent {
						intents++
					}
				}
				ran := 0
				for _, key := range []string{"echo", "refuse"} {
					for _, n := range exec.ledgerFor(key) {
						ran += n
					}
				}
				if intents != model.Calls() || actions != ran {
					t.Fatalf("after the cancel: %d model intents for %d calls, %d action intents for %d executions", intents, model.Calls(), actions, ran)
				}
			}
			if err != nil {
				// The same runner: its cancel point has passed.
				if _, err := r.Resume(context.Background(), "ref", equivalenceAgent()); err != nil {
					t.Fatalf("Resume: %v", err)
				}
			}
			got, _ := polyloop.ReadLog(context.Background(), store, "ref")
			if err := polylooptest.CheckEquivalent(got, ref); err != nil {
				t.Fatal(err)
			}
			if n := len(got.ModelResults()); model.Calls() != n {
				t.Fatalf("%d model calls for %d recorded results (%d before the resume): a paid call was lost", model.Calls(), n, callsBefore)
			}
			executions := 0
			for _, key := range []string{"echo", "refuse"} {
				for k2, n := range exec.ledgerFor(key) {
					want := 1
					if k2 == "refuse:null" {
						want = 2 // steps 3 and 9 ask for the same refused action
					}
					if n != want {
						t.Fatalf("%s executed %d times, want %d", k2, n, want)
					}
					executions += n
				}
			}
			if want := polyloop.ComputeTotals(ref).Actions; executions != want {
				t.Fatalf("%d executions, want %d (the reference run's)", executions, want)
			}
		})
	}
}

// The wrappers keep the wrapped seams' identity in the snapshot.
func (m cancelModel) Describe() polyloop.Component {
	return m.inner.(polyloop.Describer).Describe()
}

func (e cancelExec) Describe() polyloop.Component {
	return polyloop.Component{Name: fmt.Sprintf("%T", e.inner)}
}

// A run cancelled before its first model call writes nothing: no record is
// invented for work that never started.
func TestCancelBeforeStartWritesNothing(t *testing.T) {
	store := memstore.New()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancelled between the existence check and the first model call.
	r := newRunner(referenceScript(), cancelOnRead{store, cancel}, newTestExec())
	_, err := r.Run(ctx, "r", testAgent(), polyloop.Task{Input: "t"})
	var pe *polyloop.PersistenceError
	if !errors.Is(err, context.Canceled) || errors.As(err, &pe) {
		t.Fatal(err)
	}
	if store.Len() != 0 {
		t.Fatalf("%d records written for a run cancelled before it started", store.Len())
	}
}

type cancelOnRead struct {
	*memstore.Store
	cancel context.CancelFunc
}

func (c cancelOnRead) ReadRows(ctx context.Context, id string) ([]polyloop.Row, error) {
	log, err := c.Store.ReadRows(ctx, id)
	c.cancel()
	return log, err
}
