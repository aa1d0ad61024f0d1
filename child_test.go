package polyloop_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
)

// delegateExec runs the "delegate" tool by invoking a child agent; other
// tools go to the test environment.
type delegateExec struct {
	env     *testExec
	invoke  func(ctx context.Context) (string, error)
	invoked atomic.Int32
}

func (d *delegateExec) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	if a.Tool != "delegate" {
		return d.env.Execute(ctx, a)
	}
	d.invoked.Add(1)
	obs, err := d.invoke(ctx)
	if err != nil {
		return polyloop.ActionOutcome{}, err
	}
	return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: obs}, nil
}

func parentAgent() polyloop.Agent {
	a := testAgent()
	a.Name = "parent"
	a.Tools = append(a.Tools, polyloop.ToolSpec{Name: "delegate", Replay: polyloop.ReplaySafe})
	return a
}

func childAgent() polyloop.Agent {
	a := testAgent()
	a.Name = "child"
	return a
}

type childFixture struct {
	store      *memstore.Store
	childExec  *testExec
	childModel *scriptmodel.Client
	parent     *polyloop.Runner
	exec       *delegateExec
	handled    atomic.Int32
}

// newChildFixture: the parent delegates at step 1 and answers at step 2; the
// child runs the given script.
func newChildFixture(childTurns []scriptmodel.Turn, recv func(f *childFixture) polyloop.Receive[string]) *childFixture {
	f := &childFixture{store: memstore.New(), childExec: newTestExec()}
	f.childModel = scriptmodel.New(childTurns...)
	childRunner := &polyloop.Runner{Model: f.childModel, Parser: testParser{}, Executor: f.childExec, Store: f.store}
	f.exec = &delegateExec{env: newTestExec()}
	f.exec.invoke = func(ctx context.Context) (string, error) {
		return polyloop.InvokeChild(ctx, polyloop.Child{Runner: childRunner, Agent: childAgent()}, polyloop.Task{Input: "sub-question"}, recv(f))
	}
	f.parent = &polyloop.Runner{Model: scriptmodel.New(call(1, "delegate", nil), scriptmodel.Reply("parent done")),
		Parser: testParser{}, Executor: f.exec, Store: f.store}
	return f
}

func answerOr(fallback string) func(f *childFixture) polyloop.Receive[string] {
	return func(f *childFixture) polyloop.Receive[string] {
		return polyloop.Receive[string]{
			Succeeded: func(r polyloop.RunResult) (string, error) {
				f.handled.Add(1)
				return "child says " + r.FinalAnswer, nil
			},
			Failed: func(cf *polyloop.ChildFailure) (string, error) {
				f.handled.Add(1)
				return fallback + " (child " + string(cf.StopReason) + ")", nil
			},
		}
	}
}

// Rule 1: a child that finished with another stop reason than completed is
// delivered to Failed; the parent's log records the reception.
func TestChildFailureReceived(t *testing.T) {
	f := newChildFixture([]scriptmodel.Turn{call(1, "broken", nil)}, answerOr("fallback"))
	res, err := f.parent.Run(context.Background(), "p", parentAgent(), polyloop.Task{Input: "q"})
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	plog, _ := polyloop.ReadLog(context.Background(), f.store, "p")
	recs := plog.Receptions()
	if len(recs) != 1 || recs[0].Reception != polyloop.ReceptionHandled || recs[0].Handler != "failed" ||
		recs[0].StopReason != polyloop.StopEnvError || string(recs[0].Value) != `"fallback (child env_error)"` {
		t.Fatalf("receptions %+v", recs)
	}
	if got := plog.Steps()[0].Observation; got != "fallback (child env_error)" {
		t.Fatalf("observation %q", got)
	}
	clog, _ := polyloop.ReadLog(context.Background(), f.store, recs[0].ChildRunID)
	if st := clog.Started(); st.Parent == nil || st.Parent.RunID != "p" || st.Parent.Step != 1 || clog.Finished().StopReason != polyloop.StopEnvError {
		t.Fatalf("child log: %+v", st)
	}
}

// Rule 1, without Failed: the failure propagates as a *ChildFailure.
func TestChildFailureWithoutHandler(t *testing.T) {
	var got error
	f := newChildFixture([]scriptmodel.Turn{call(1, "broken", nil)}, func(*childFixture) polyloop.Receive[string] {
		return polyloop.Receive[string]{Succeeded: func(r polyloop.RunResult) (string, error) { return r.FinalAnswer, nil }}
	})
	inner := f.exec.invoke
	f.exec.invoke = func(ctx context.Context) (string, error) {
		_, got = inner(ctx)
		return "delegation failed", nil
	}
	if _, err := f.parent.Run(context.Background(), "p", parentAgent(), polyloop.Task{Input: "q"}); err != nil {
		t.Fatal(err)
	}
	var cf *polyloop.ChildFailure
	if !errors.As(got, &cf) || cf.StopReason != polyloop.StopEnvError || cf.ChildRunID != "p/1.1" {
		t.Fatalf("got %v", got)
	}
	// Met again by a replay, the failure carries the child's result.
	got = nil
	plog0, _ := polyloop.ReadLog(context.Background(), f.store, "p")
	trimmed := plog0.Records[:len(plog0.Records)-5] // back to the reception: drop step 1's record, step 2 and the finish
	if trimmed[len(trimmed)-1].Kind() != polyloop.KindChildReception {
		t.Fatalf("kinds %v", kinds(plog0))
	}
	f.store.Put("p", trimmed)
	if _, err := f.parent.Resume(context.Background(), "p", parentAgent()); err != nil {
		t.Fatal(err)
	}
	if !errors.As(got, &cf) || cf.Result.StopReason != polyloop.StopEnvError || cf.Result.Totals.Steps != 1 {
		t.Fatalf("reused failure %+v", cf)
	}
	plog, _ := polyloop.ReadLog(context.Background(), f.store, "p")
	if r := plog.Receptions(); len(r) != 1 || r[0].Reception != polyloop.ReceptionAccepted {
		t.Fatalf("receptions %+v", r)
	}
}

// Rule 2: errors are never received, whatever they look like — here the
// child's executor fails with an error that IS a *ChildFailure value.
func TestChildErrorsNotReceivable(t *testing.T) {
	disguised := &polyloop.ChildFailure{ChildRunID: "fake", StopReason: polyloop.StopEnvError}
	for _, tc := range []struct {
		name  string
		model polyloop.ModelClient
		exec  polyloop.ActionExecutor
		want  error
	}{
		{"executor error disguised as a child failure", scriptmodel.New(call(1, "echo", map[string]string{"text": "x"})),
			errExec{disguised}, disguised},
		{"cancellation", scriptmodel.New(call(1, "echo", map[string]string{"text": "x"})), errExec{context.Canceled}, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := memstore.New()
			child := &polyloop.Runner{Model: tc.model, Parser: testParser{}, Executor: tc.exec, Store: store}
			var failedCalled bool
			var got error
			exec := &delegateExec{env: newTestExec(), invoke: func(ctx context.Context) (string, error) {
				_, got = polyloop.InvokeChild(ctx, polyloop.Child{Runner: child, Agent: childAgent()}, polyloop.Task{Input: "q"},
					polyloop.Receive[string]{Succeeded: answerText, Failed: func(*polyloop.ChildFailure) (string, error) { failedCalled = true; return "", nil }})
				return "", got
			}}
			parent := &polyloop.Runner{Model: scriptmodel.New(call(1, "delegate", nil)), Parser: testParser{}, Executor: exec, Store: store}
			_, err := parent.Run(context.Background(), "p", parentAgent(), polyloop.Task{Input: "q"})
			if failedCalled {
				t.Fatal("Failed was called for an error")
			}
			if !errors.Is(err, tc.want) || got != err {
				t.Fatalf("err = %v, want %v propagated unchanged", err, tc.want)
			}
			plog, _ := polyloop.ReadLog(context.Background(), store, "p")
			if len(plog.Receptions()) != 0 {
				t.Fatal("a reception was recorded for an error")
			}
		})
	}
	t.Run("persistence error", func(t *testing.T) {
		base := memstore.New()
		childStore := &failingStore{Store: base, fail: errors.New("disk gone")}
		child := &polyloop.Runner{Model: scriptmodel.New(scriptmodel.Reply("x")), Parser: testParser{}, Executor: newTestExec(), Store: childStore}
		var failedCalled bool
		exec := &delegateExec{env: newTestExec(), invoke: func(ctx context.Context) (string, error) {
			return polyloop.InvokeChild(ctx, polyloop.Child{Runner: child, Agent: childAgent()}, polyloop.Task{Input: "q"},
				polyloop.Receive[string]{Succeeded: answerText, Failed: func(*polyloop.ChildFailure) (string, error) { failedCalled = true; return "", nil }})
		}}
		parent := &polyloop.Runner{Model: scriptmodel.New(call(1, "delegate", nil)), Parser: testParser{}, Executor: exec, Store: base}
		_, err := parent.Run(context.Background(), "p", parentAgent(), polyloop.Task{Input: "q"})
		var pe *polyloop.PersistenceError
		if failedCalled || !errors.As(err, &pe) {
			t.Fatalf("failed called %v, err %v", failedCalled, err)
		}
	})
}

func answerText(r polyloop.RunResult) (string, error) { return r.FinalAnswer, nil }

type errExec struct{ err error }

func (e errExec) Execute(context.Context, polyloop.Action) (polyloop.ActionOutcome, error) {
	return polyloop.ActionOutcome{}, e.err
}

type failingStore struct {
	*memstore.Store
	fail error
}

func (f *failingStore) Append(context.Context, string, []polyloop.Row) error { return f.fail }

// Rule 3: a handler that fails does not re-enter Failed; its failure is
// recorded and propagates.
func TestChildHandlerFailure(t *testing.T) {
	handlerErr := errors.New("cannot use that answer")
	var failedCalls int
	f := newChildFixture([]scriptmodel.Turn{scriptmodel.Reply("child answer")}, func(*childFixture) polyloop.Receive[string] {
		return polyloop.Receive[string]{
			Succeeded: func(polyloop.RunResult) (string, error) { return "", handlerErr },
			Failed:    func(*polyloop.ChildFailure) (string, error) { failedCalls++; return "", nil },
		}
	})
	_, err := f.parent.Run(context.Background(), "p", parentAgent(), polyloop.Task{Input: "q"})
	if !errors.Is(err, handlerErr) || failedCalls != 0 {
		t.Fatalf("err %v, Failed called %d times", err, failedCalls)
	}
	plog, _ := polyloop.ReadLog(context.Background(), f.store, "p")
	r := plog.Receptions()
	if len(r) != 1 || r[0].Reception != polyloop.ReceptionFailed || r[0].Failure == nil {
		t.Fatalf("receptions %+v", r)
	}
	// Resumed, the action replays and meets the recorded failure instead of
	// running the handler again.
	_, err = f.parent.Resume(context.Background(), "p", parentAgent())
	var re *polyloop.ReceptionError
	if !errors.As(err, &re) || re.Handler != "succeeded" {
		t.Fatalf("resume err = %v", err)
	}
}

// Rule 4 and the crash example: a crash between the child finishing and the
// parent's reception runs the handler when resumed, without running the
// child again; a crash after the reception was recorded reuses it and never
// runs the handler again. (A crash after the handler returned but before its
// reception landed runs it again: handlers run in-process, like parsers, and
// should have no outside effects.)
func TestChildReceptionSurvivesCrash(t *testing.T) {
	full := newChildFixture([]scriptmodel.Turn{scriptmodel.Reply("42")}, answerOr("fallback"))
	if _, err := full.parent.Run(context.Background(), "p", parentAgent(), polyloop.Task{Input: "q"}); err != nil {
		t.Fatal(err)
	}
	total := full.store.Len()
	sawBefore, sawAfter := false, false
	for k := 1; k < total; k++ {
		f := newChildFixture([]scriptmodel.Turn{scriptmodel.Reply("42")}, answerOr("fallback"))
		f.store.SetFaults(memstore.Options{CrashAfter: k})
		_, err := f.parent.Run(context.Background(), "p", parentAgent(), polyloop.Task{Input: "q"})
		if !errors.Is(err, memstore.ErrCrashed) {
			t.Fatalf("k=%d: %v", k, err)
		}
		clog, _ := polyloop.ReadLog(context.Background(), f.store, "p/1.1")
		plog, _ := polyloop.ReadLog(context.Background(), f.store, "p")
		childDone := clog.Finished() != nil
		received := len(plog.Receptions()) == 1
		childCalls := f.childModel.Calls()
		f.handled.Store(0)
		f.store.SetFaults(memstore.Options{})
		res, err := continueRun(f.parent, f.store, "p", parentAgent(), "q")
		if err != nil || res.StopReason != polyloop.StopCompleted {
			t.Fatalf("k=%d: %+v %v", k, res, err)
		}
		want := int32(1)
		if received {
			want = 0
		}
		if n := f.handled.Load(); n != want {
			t.Fatalf("k=%d: handler ran %d times on resume, want %d (reception recorded: %v)", k, n, want, received)
		}
		if childDone {
			clog2, _ := polyloop.ReadLog(context.Background(), f.store, "p/1.1")
			if len(clog2.Records) != len(clog.Records) || f.childModel.Calls() != childCalls {
				t.Fatalf("k=%d: a finished child ran again", k)
			}
		}
		plog, _ = polyloop.ReadLog(context.Background(), f.store, "p")
		if got := plog.Steps()[0].Observation; got != "child says 42" {
			t.Fatalf("k=%d: observation %q", k, got)
		}
		sawBefore = sawBefore || (childDone && !received)
		sawAfter = sawAfter || received
	}
	if !sawBefore || !sawAfter {
		t.Fatalf("crash points missed a case: between child and reception %v, after reception %v", sawBefore, sawAfter)
	}
}

// Rules 5 and 6: a retry loop gets a new child per attempt; parallel
// children have independent identities even when they fail alike.
func TestChildIdentities(t *testing.T) {
	store := memstore.New()
	child := &polyloop.Runner{Model: scriptmodel.New(call(1, "broken", nil)), Parser: testParser{}, Executor: newTestExec(), Store: store}
	var ids []string
	var mu sync.Mutex
	exec := &delegateExec{env: newTestExec(), invoke: func(ctx context.Context) (string, error) {
		recv := polyloop.Receive[string]{Succeeded: answerText, Failed: func(cf *polyloop.ChildFailure) (string, error) {
			mu.Lock()
			ids = append(ids, cf.ChildRunID)
			mu.Unlock()
			return "", cf
		}}
		for attempt := 0; attempt < 2; attempt++ { // the caller's own bounded retry
			if _, err := polyloop.InvokeChild(ctx, polyloop.Child{Runner: child, Agent: childAgent()}, polyloop.Task{Input: "q"}, recv); err == nil {
				break
			}
		}
		var wg sync.WaitGroup
		for _, key := range []string{"left", "right"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = polyloop.InvokeChild(ctx, polyloop.Child{Runner: child, Agent: childAgent(), Key: key}, polyloop.Task{Input: "q"}, recv)
			}()
		}
		wg.Wait()
		return "tried", nil
	}}
	parent := &polyloop.Runner{Model: scriptmodel.New(call(1, "delegate", nil), scriptmodel.Reply("ok")), Parser: testParser{}, Executor: exec, Store: store}
	if _, err := parent.Run(context.Background(), "p", parentAgent(), polyloop.Task{Input: "q"}); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	for _, want := range []string{"p/1.1", "p/1.2", "p/1:left", "p/1:right"} {
		if !seen[want] {
			t.Fatalf("child ids %v lack %s", ids, want)
		}
	}
	if len(ids) != 4 {
		t.Fatalf("ids %v", ids)
	}
	kids, _ := store.ListRuns(context.Background(), polyloop.RunFilter{ParentRunID: "p"})
	if len(kids) != 4 {
		t.Fatalf("%d children listed", len(kids))
	}
}

// Rule 7: a completed child stays completed when the parent later fails.
func TestCompletedChildStays(t *testing.T) {
	f := newChildFixture([]scriptmodel.Turn{scriptmodel.Reply("42")}, answerOr("x"))
	f.parent.Model = scriptmodel.New(call(1, "delegate", nil), call(2, "broken", nil))
	res, err := f.parent.Run(context.Background(), "p", parentAgent(), polyloop.Task{Input: "q"})
	if err != nil || res.StopReason != polyloop.StopEnvError {
		t.Fatalf("%+v %v", res, err)
	}
	clog, _ := polyloop.ReadLog(context.Background(), f.store, "p/1.1")
	if clog.Finished().StopReason != polyloop.StopCompleted {
		t.Fatal("child changed")
	}
}

func TestInvokeChildOutsideAction(t *testing.T) {
	_, err := polyloop.InvokeChild(context.Background(), polyloop.Child{}, polyloop.Task{}, polyloop.Receive[polyloop.RunResult]{})
	if !errors.Is(err, polyloop.ErrNotInAction) {
		t.Fatal(err)
	}
	_ = fmt.Sprint()
}

// SPEC §7.4: after a persistence failure the run writes nothing more, even
// when an executor swallows the error and reports an outcome.
func TestSwallowedPersistenceErrorStopsTheRun(t *testing.T) {
	base := memstore.New()
	store := &receptionFailStore{Store: base}
	child := &polyloop.Runner{Model: scriptmodel.New(scriptmodel.Reply("42")), Parser: testParser{}, Executor: newTestExec(), Store: store}
	var swallowed error
	exec := &delegateExec{env: newTestExec(), invoke: func(ctx context.Context) (string, error) {
		_, swallowed = polyloop.InvokeChild(ctx, polyloop.Child{Runner: child, Agent: childAgent()}, polyloop.Task{Input: "q"},
			polyloop.Receive[string]{Succeeded: answerText})
		return "swallowed", nil // a careless executor
	}}
	parent := &polyloop.Runner{Model: scriptmodel.New(call(1, "delegate", nil), scriptmodel.Reply("done")), Parser: testParser{}, Executor: exec, Store: store}
	_, err := parent.Run(context.Background(), "p", parentAgent(), polyloop.Task{Input: "q"})
	var pe *polyloop.PersistenceError
	if !errors.As(err, &pe) || !errors.As(swallowed, &pe) || !polyloop.MustPropagate(swallowed) {
		t.Fatalf("Run err = %v, swallowed = %v", err, swallowed)
	}
	plog, _ := polyloop.ReadLog(context.Background(), base, "p")
	if lastKind(plog) != polyloop.KindActionIntent {
		t.Fatalf("records written after the persistence failure: %v", kinds(plog))
	}
}

type receptionFailStore struct{ *memstore.Store }

func (s *receptionFailStore) Append(ctx context.Context, runID string, recs []polyloop.Row) error {
	for _, r := range recs {
		if r.Kind == polyloop.KindChildReception {
			return errors.New("disk full")
		}
	}
	return s.Store.Append(ctx, runID, recs)
}

// Errors from a child carry the boundary's mark; an ordinary error that
// looks alike does not.
func TestMustPropagate(t *testing.T) {
	if polyloop.MustPropagate(errors.New("polyloop: store append failed")) {
		t.Fatal("an ordinary error with a similar text was marked")
	}
	if !polyloop.MustPropagate(fmt.Errorf("wrapped: %w", &polyloop.ChildError{ChildRunID: "c", Err: context.Canceled})) {
		t.Fatal("a child error was not marked")
	}
	if !polyloop.MustPropagate(&polyloop.PersistenceError{Op: "append", Err: errors.New("x")}) {
		t.Fatal("a persistence error was not marked")
	}
}

// delegateWith runs a parent whose "delegate" action calls invoke; it
// returns the parent's Run error.
func delegateWith(t *testing.T, store *memstore.Store, invoke func(ctx context.Context) (string, error)) error {
	t.Helper()
	exec := &delegateExec{env: newTestExec(), invoke: invoke}
	parent := &polyloop.Runner{Model: scriptmodel.New(call(1, "delegate", nil), scriptmodel.Reply("ok")), Parser: testParser{}, Executor: exec, Store: store}
	_, err := parent.Run(context.Background(), "p", parentAgent(), polyloop.Task{Input: "q"})
	return err
}

// Keyed and unkeyed children live in separate name spaces; keys are checked.
func TestChildKeys(t *testing.T) {
	store := memstore.New()
	answers := map[string]string{}
	mk := func(answer string) polyloop.Child {
		return polyloop.Child{Runner: &polyloop.Runner{Model: scriptmodel.New(scriptmodel.Reply(answer)), Parser: testParser{}, Executor: newTestExec(), Store: store}, Agent: childAgent()}
	}
	var keyErrs []error
	err := delegateWith(t, store, func(ctx context.Context) (string, error) {
		recv := polyloop.Receive[string]{Succeeded: answerText}
		keyed := mk("keyed")
		keyed.Key = "2"
		for _, c := range []polyloop.Child{mk("first"), keyed, mk("second")} {
			a, err := polyloop.InvokeChild(ctx, c, polyloop.Task{Input: "q"}, recv)
			if err != nil {
				return "", err
			}
			answers[a] = a
		}
		for _, key := range []string{"2", "a/b"} {
			bad := mk("x")
			bad.Key = key
			_, err := polyloop.InvokeChild(ctx, bad, polyloop.Task{Input: "q"}, recv)
			keyErrs = append(keyErrs, err)
		}
		return "ok", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(answers) != 3 {
		t.Fatalf("answers %v: a keyed child took an unkeyed child's identity", answers)
	}
	for _, e := range keyErrs {
		if !errors.Is(e, polyloop.ErrInvalidConfig) {
			t.Fatalf("bad key accepted: %v", e)
		}
	}
}

// Concurrent children without keys are refused: their identities would
// depend on scheduling.
func TestConcurrentUnkeyedChildrenRefused(t *testing.T) {
	store := memstore.New()
	release := make(chan struct{})
	var releaseOnce sync.Once
	defer releaseOnce.Do(func() { close(release) }) // never leave the first child hanging
	slow := &polyloop.Runner{Model: &gateModel{gate: release, started: make(chan struct{})}, Parser: testParser{}, Executor: newTestExec(), Store: store}
	var second error
	err := delegateWith(t, store, func(ctx context.Context) (string, error) {
		done := make(chan error, 1)
		go func() {
			_, err := polyloop.InvokeChild(ctx, polyloop.Child{Runner: slow, Agent: childAgent()}, polyloop.Task{Input: "q"}, polyloop.Receive[string]{Succeeded: answerText})
			done <- err
		}()
		<-slowStarted(slow)
		_, second = polyloop.InvokeChild(ctx, polyloop.Child{Runner: slow, Agent: childAgent()}, polyloop.Task{Input: "q"}, polyloop.Receive[string]{Succeeded: answerText})
		releaseOnce.Do(func() { close(release) })
		return "ok", <-done
	})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(second, polyloop.ErrInvalidConfig) {
		t.Fatalf("concurrent unkeyed child accepted: %v", second)
	}
}

// gateModel answers once gate is closed, and says when a call has begun.
type gateModel struct {
	gate    chan struct{}
	started chan struct{}
	once    sync.Once
}

func (g *gateModel) Complete(ctx context.Context, _ polyloop.ModelRequest) (polyloop.ModelReply, error) {
	g.once.Do(func() { close(g.started) })
	<-g.gate
	return polyloop.ModelReply{Text: "late"}, nil
}

func slowStarted(r *polyloop.Runner) chan struct{} { return r.Model.(*gateModel).started }

// Rule 3 and the equivalence property: a failed handler's error has the same
// text the first time and when a resumed parent meets the recorded failure.
func TestReceptionErrorSameAfterResume(t *testing.T) {
	handlerErr := errors.New("answer unusable")
	f := newChildFixture([]scriptmodel.Turn{scriptmodel.Reply("child answer")}, func(*childFixture) polyloop.Receive[string] {
		return polyloop.Receive[string]{Succeeded: func(polyloop.RunResult) (string, error) { return "", handlerErr }}
	})
	_, first := f.parent.Run(context.Background(), "p", parentAgent(), polyloop.Task{Input: "q"})
	_, again := f.parent.Resume(context.Background(), "p", parentAgent())
	if first == nil || again == nil || first.Error() != again.Error() {
		t.Fatalf("first %q, after resume %q", first, again)
	}
	if !errors.Is(first, handlerErr) {
		t.Fatal("the first error does not reach the handler's error")
	}
}

// AsChildFailure refuses a failure wrapped in an error that must propagate.
func TestAsChildFailure(t *testing.T) {
	f := &polyloop.ChildFailure{ChildRunID: "c", StopReason: polyloop.StopMaxSteps}
	if got, ok := polyloop.AsChildFailure(fmt.Errorf("x: %w", f)); !ok || got != f {
		t.Fatal("a received failure was not recognised")
	}
	if _, ok := polyloop.AsChildFailure(&polyloop.ChildError{ChildRunID: "c", Err: f}); ok {
		t.Fatal("a child error disguised as a failure was accepted")
	}
}

// Rule 2, the remaining cases: a real cancellation, a panic in a child's
// seam, a corrupt child log and a child snapshot mismatch all propagate, and
// Failed is never called.
func TestChildMechanismFailuresPropagate(t *testing.T) {
	failed := func(called *bool) polyloop.Receive[string] {
		return polyloop.Receive[string]{Succeeded: answerText, Failed: func(*polyloop.ChildFailure) (string, error) { *called = true; return "fallback", nil }}
	}
	t.Run("cancellation", func(t *testing.T) {
		store := memstore.New()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		child := &polyloop.Runner{Model: &cancelOnEnter{inner: scriptmodel.New(scriptmodel.Turn{Text: "x", Delay: time.Hour}), cancel: cancel}, Parser: testParser{}, Executor: newTestExec(), Store: store}
		var called bool
		exec := &delegateExec{env: newTestExec(), invoke: func(ctx context.Context) (string, error) {
			return polyloop.InvokeChild(ctx, polyloop.Child{Runner: child, Agent: childAgent()}, polyloop.Task{Input: "q"}, failed(&called))
		}}
		parent := &polyloop.Runner{Model: scriptmodel.New(call(1, "delegate", nil)), Parser: testParser{}, Executor: exec, Store: store}
		_, err := parent.Run(ctx, "p", parentAgent(), polyloop.Task{Input: "q"})
		if called || !errors.Is(err, context.Canceled) || !polyloop.MustPropagate(err) {
			t.Fatalf("Failed called %v, err %v", called, err)
		}
	})
	t.Run("panic in a child's parser", func(t *testing.T) {
		store := memstore.New()
		child := &polyloop.Runner{Model: scriptmodel.New(scriptmodel.Reply("PANIC")), Parser: testParser{}, Executor: newTestExec(), Store: store}
		var called bool
		defer func() {
			if recover() == nil || called {
				t.Fatalf("panic did not propagate (Failed called %v)", called)
			}
		}()
		_ = delegateWith(t, store, func(ctx context.Context) (string, error) {
			return polyloop.InvokeChild(ctx, polyloop.Child{Runner: child, Agent: childAgent()}, polyloop.Task{Input: "q"}, failed(&called))
		})
	})
	t.Run("corrupt child log", func(t *testing.T) {
		store := memstore.New()
		store.Put("p/1.1", polyloop.ParseLogScript(t, "r", []string{"start", "result 1.1 text=a"}).Records)
		child := &polyloop.Runner{Model: scriptmodel.New(scriptmodel.Reply("x")), Parser: testParser{}, Executor: newTestExec(), Store: store}
		var called bool
		err := delegateWith(t, store, func(ctx context.Context) (string, error) {
			return polyloop.InvokeChild(ctx, polyloop.Child{Runner: child, Agent: childAgent()}, polyloop.Task{Input: "q"}, failed(&called))
		})
		if called || !errors.Is(err, polyloop.ErrCorruptLog) {
			t.Fatalf("Failed called %v, err %v", called, err)
		}
	})
	t.Run("child snapshot mismatch", func(t *testing.T) {
		store := memstore.New()
		// An unfinished child of another configuration is in the way.
		other := childAgent()
		other.System = "another prompt"
		unfinishedChild(t, store, other)
		child := &polyloop.Runner{Model: scriptmodel.New(scriptmodel.Reply("x")), Parser: testParser{}, Executor: newTestExec(), Store: store}
		var called bool
		err := delegateWith(t, store, func(ctx context.Context) (string, error) {
			return polyloop.InvokeChild(ctx, polyloop.Child{Runner: child, Agent: childAgent()}, polyloop.Task{Input: "q"}, failed(&called))
		})
		if called || !errors.Is(err, polyloop.ErrSnapshotMismatch) {
			t.Fatalf("Failed called %v, err %v", called, err)
		}
	})
}

// unfinishedChild leaves the log of an unfinished child p/1.1 run with agent.
func unfinishedChild(t *testing.T, store *memstore.Store, agent polyloop.Agent) {
	t.Helper()
	store.SetFaults(memstore.Options{CrashAfter: store.Len() + 2})
	r := &polyloop.Runner{Model: scriptmodel.New(scriptmodel.Reply("x")), Parser: testParser{}, Executor: newTestExec(), Store: store}
	if _, err := r.Run(context.Background(), "p/1.1", agent, polyloop.Task{Input: "q"}); !errors.Is(err, memstore.ErrCrashed) {
		t.Fatal(err)
	}
	store.SetFaults(memstore.Options{})
}

// A configuration change the caller allowed when resuming the parent is
// allowed for the children the parent resumes, and recorded in their logs.
func TestParentOverrideReachesChild(t *testing.T) {
	store := memstore.New()
	child := &polyloop.Runner{Model: scriptmodel.New(scriptmodel.Reply("42")), Parser: testParser{}, Executor: newTestExec(), Store: store}
	first := true
	exec := &delegateExec{env: newTestExec(), invoke: func(ctx context.Context) (string, error) {
		if first { // the parent's first attempt dies before it reaches the child
			first = false
			return "", errFail
		}
		return polyloop.InvokeChild(ctx, polyloop.Child{Runner: child, Agent: childAgent()}, polyloop.Task{Input: "q"}, polyloop.Receive[string]{Succeeded: answerText})
	}}
	parent := &polyloop.Runner{Model: scriptmodel.New(call(1, "delegate", nil), scriptmodel.Reply("ok")), Parser: testParser{}, Executor: exec, Store: store}
	if _, err := parent.Run(context.Background(), "p", parentAgent(), polyloop.Task{Input: "q"}); !errors.Is(err, errFail) {
		t.Fatal(err)
	}
	old := childAgent()
	old.System = "the child's old prompt"
	unfinishedChild(t, store, old)
	if _, err := parent.Resume(context.Background(), "p", parentAgent()); !errors.Is(err, polyloop.ErrSnapshotMismatch) {
		t.Fatalf("without the override: %v", err)
	}
	res, err := parent.ResumeWith(context.Background(), "p", parentAgent(), polyloop.ResumeOptions{AllowConfigChange: true})
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("%+v %v", res, err)
	}
	clog, _ := polyloop.ReadLog(context.Background(), store, "p/1.1")
	var overridden bool
	for _, r := range clog.Records {
		if _, ok := r.Body.(*polyloop.ConfigOverride); ok {
			overridden = true
		}
	}
	if !overridden || clog.Finished() == nil {
		t.Fatalf("child log %v", kinds(clog))
	}
}

// A cancellation that arrives as the handler returns does not lose the
// reception: it is written, and a resumed parent reuses it.
func TestReceptionKeptOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var handled int
	f := newChildFixture([]scriptmodel.Turn{scriptmodel.Reply("42")}, func(*childFixture) polyloop.Receive[string] {
		return polyloop.Receive[string]{Succeeded: func(r polyloop.RunResult) (string, error) {
			handled++
			cancel()
			return "got " + r.FinalAnswer, nil
		}}
	})
	_, err := f.parent.Run(ctx, "p", parentAgent(), polyloop.Task{Input: "q"})
	var pe *polyloop.PersistenceError
	if !errors.Is(err, context.Canceled) || errors.As(err, &pe) {
		t.Fatalf("Run err = %v", err)
	}
	plog, _ := polyloop.ReadLog(context.Background(), f.store, "p")
	if len(plog.Receptions()) != 1 {
		t.Fatalf("reception lost: %v", kinds(plog))
	}
	if _, err := f.parent.Resume(context.Background(), "p", parentAgent()); err != nil {
		t.Fatal(err)
	}
	if handled != 1 {
		t.Fatalf("handler ran %d times", handled)
	}
}

// A handler that fails with an error that must propagate is not a failed
// reception: nothing is recorded, the error keeps its mark, and a replay
// meets the handler again.
func TestHandlerMechanismErrorNotRecorded(t *testing.T) {
	mech := &polyloop.PersistenceError{Op: "append", RunID: "elsewhere", Err: errors.New("disk full")}
	calls := 0
	f := newChildFixture([]scriptmodel.Turn{scriptmodel.Reply("42")}, func(*childFixture) polyloop.Receive[string] {
		return polyloop.Receive[string]{Succeeded: func(polyloop.RunResult) (string, error) {
			calls++
			if calls == 1 {
				return "", mech
			}
			return "fine", nil
		}}
	})
	_, err := f.parent.Run(context.Background(), "p", parentAgent(), polyloop.Task{Input: "q"})
	if !polyloop.MustPropagate(err) || !errors.Is(err, mech) {
		t.Fatalf("Run err = %v", err)
	}
	plog, _ := polyloop.ReadLog(context.Background(), f.store, "p")
	if len(plog.Receptions()) != 0 {
		t.Fatal("a mechanism failure was recorded as a reception")
	}
	res, err := f.parent.Resume(context.Background(), "p", parentAgent())
	if err != nil || res.StopReason != polyloop.StopCompleted || calls != 2 {
		t.Fatalf("resume %+v %v, handler calls %d", res, err, calls)
	}
}

// A Failed handler may start an unkeyed fallback child.
func TestFallbackChildFromHandler(t *testing.T) {
	store := memstore.New()
	mk := func(turn scriptmodel.Turn) polyloop.Child {
		return polyloop.Child{Runner: &polyloop.Runner{Model: scriptmodel.New(turn), Parser: testParser{}, Executor: newTestExec(), Store: store}, Agent: childAgent()}
	}
	var got string
	err := delegateWith(t, store, func(ctx context.Context) (string, error) {
		v, err := polyloop.InvokeChild(ctx, mk(call(1, "broken", nil)), polyloop.Task{Input: "q"}, polyloop.Receive[string]{
			Succeeded: answerText,
			Failed: func(*polyloop.ChildFailure) (string, error) {
				return polyloop.InvokeChild(ctx, mk(scriptmodel.Reply("backup")), polyloop.Task{Input: "q"}, polyloop.Receive[string]{Succeeded: answerText})
			},
		})
		got = v
		return v, err
	})
	if err != nil || got != "backup" {
		t.Fatalf("got %q, err %v", got, err)
	}
}

// An action that returns while a child it started is still being received
// fails (its step is unknown) instead of letting the reception land after
// the step record; a child started after the action returned is refused.
func TestChildOutlivingItsAction(t *testing.T) {
	store := memstore.New()
	release := make(chan struct{})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	slow := &polyloop.Runner{Model: &gateModel{gate: release, started: make(chan struct{})}, Parser: testParser{}, Executor: newTestExec(), Store: store}
	late := make(chan error, 1)
	err := delegateWith(t, store, func(ctx context.Context) (string, error) {
		go func() {
			_, err := polyloop.InvokeChild(ctx, polyloop.Child{Runner: slow, Agent: childAgent()}, polyloop.Task{Input: "q"}, polyloop.Receive[string]{Succeeded: answerText})
			late <- err
		}()
		<-slowStarted(slow)
		return "returned early", nil
	})
	if !errors.Is(err, polyloop.ErrNotInAction) {
		t.Fatalf("Run err = %v", err)
	}
	close(release)
	<-late
	plog, _ := polyloop.ReadLog(context.Background(), store, "p")
	if lastKind(plog) == polyloop.KindChildReception || plog.Finished() != nil {
		t.Fatalf("kinds %v", kinds(plog))
	}
	if _, err := polyloop.PlanResume(plog); err != nil {
		t.Fatalf("the parent's log is corrupt: %v", err)
	}
}
