package polyloop_test

import (
	"context"
	"errors"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
)

// A stop requested during an action lets the action finish: its step record
// is durable, no new model call starts, and Resume goes on with the next
// step with nothing of unknown outcome.
func TestStopRequestStopsAtTheNextBoundary(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	stop := make(chan struct{})
	ex := &hookExec{env: newTestExec(), hook: func(ctx context.Context) error {
		close(stop)
		if ctx.Err() != nil {
			t.Error("the stop request cancelled the action's context")
		}
		return nil
	}}
	model := scriptmodel.New(call(1, "hook", nil), call(2, "echo", map[string]string{"text": "b"}), scriptmodel.Reply("done"))
	r := newRunner(model, store, ex)
	_, err := r.Run(polyloop.WithStopRequest(ctx, stop), "r1", hookAgent(), polyloop.Task{Input: "x"})
	if !errors.Is(err, polyloop.ErrStopRequested) {
		t.Fatalf("Run: %v, want ErrStopRequested", err)
	}
	if errors.Is(err, context.Canceled) {
		t.Fatal("a stop request is not a cancellation")
	}
	log := mustRead(t, store, "r1")
	if got := lastKind(log); got != polyloop.KindStepCompleted {
		t.Fatalf("the log ends with %s, want step_completed; kinds %v", got, kinds(log))
	}
	plan, err := polyloop.PlanResume(log)
	if err != nil || plan.Action != polyloop.PlanStartStep || plan.Step != 2 {
		t.Fatalf("plan after the stop: %+v %v", plan, err)
	}
	if model.Calls() != 1 {
		t.Fatalf("%d model calls, want 1: no model call after the stop request", model.Calls())
	}
	res, err := r.Resume(ctx, "r1", hookAgent())
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("Resume: %v %v", res.StopReason, err)
	}
	if res.Totals.UnknownActions != 0 || res.Totals.UnknownModelCalls != 0 {
		t.Fatalf("unknown outcomes after a graceful stop: %+v", res.Totals)
	}
}

// A limit reached at the boundary still finishes the run: a stop request
// never leaves unfinished a run whose end is determined.
func TestStopRequestYieldsToALimit(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	stop := make(chan struct{})
	ex := &hookExec{env: newTestExec(), hook: func(context.Context) error { close(stop); return nil }}
	agent := hookAgent()
	agent.Limits.MaxSteps = 1
	r := newRunner(scriptmodel.New(call(1, "hook", nil), scriptmodel.Reply("done")), store, ex)
	res, err := r.Run(polyloop.WithStopRequest(ctx, stop), "r1", agent, polyloop.Task{Input: "x"})
	if err != nil || res.StopReason != polyloop.StopMaxSteps {
		t.Fatalf("Run: %v %v, want max_steps", res.StopReason, err)
	}
}

// A stop request does not reach a child run: the child is part of the
// parent's action in progress, which finishes; the parent stops after it.
func TestStopRequestSparesTheChild(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	stop := make(chan struct{})
	childExec := &hookExec{env: newTestExec(), hook: func(context.Context) error { close(stop); return nil }}
	childRunner := &polyloop.Runner{Model: scriptmodel.New(call(1, "hook", nil), call(2, "echo", map[string]string{"text": "c"}), scriptmodel.Reply("child done")),
		Parser: testParser{}, Executor: childExec, Store: store}
	parent := delegatingParent(childRunner)
	_, err := parent.Run(polyloop.WithStopRequest(ctx, stop), "p", parentAgent(), polyloop.Task{Input: "x"})
	if !errors.Is(err, polyloop.ErrStopRequested) {
		t.Fatalf("parent: %v, want ErrStopRequested", err)
	}
	if fin := mustRead(t, store, "p/1.1").Finished(); fin == nil || fin.StopReason != polyloop.StopCompleted {
		t.Fatalf("the child did not run to its end: %+v", fin)
	}
	if got := lastKind(mustRead(t, store, "p")); got != polyloop.KindStepCompleted {
		t.Fatalf("the parent's log ends with %s, want the delegate step's record", got)
	}
}

// Without a stop request, or with a channel never closed, nothing changes.
func TestStopRequestUnclosedChangesNothing(t *testing.T) {
	ctx := polyloop.WithStopRequest(context.Background(), make(chan struct{}))
	store := memstore.New()
	r := newRunner(scriptmodel.New(call(1, "echo", map[string]string{"text": "a"}), scriptmodel.Reply("done")), store, newTestExec())
	res, err := r.Run(ctx, "r1", testAgent(), polyloop.Task{Input: "x"})
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("Run: %v %v", res.StopReason, err)
	}
}
