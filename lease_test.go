package polyloop_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
)

// hookExec runs hook for the tool "hook" (then reports it executed) and
// hands every other tool to the test environment.
type hookExec struct {
	env  *testExec
	hook func(ctx context.Context) error
}

func (h *hookExec) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	if a.Tool != "hook" {
		return h.env.Execute(ctx, a)
	}
	if err := h.hook(ctx); err != nil {
		return polyloop.ActionOutcome{}, err
	}
	return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "hooked"}, nil
}

func hookAgent() polyloop.Agent {
	a := testAgent()
	a.Tools = append(a.Tools, polyloop.ToolSpec{Name: "hook", Replay: polyloop.ReplaySafe})
	return a
}

func owner(token string) polyloop.LeaseOwner {
	return polyloop.LeaseOwner{Host: "elsewhere", PID: 4242, Token: token, Since: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
}

func takeLease(t *testing.T, s *memstore.Store, runID, token string) polyloop.Lease {
	t.Helper()
	l, err := s.AcquireLease(context.Background(), runID, polyloop.LeaseRequest{Owner: owner(token)})
	if err != nil {
		t.Fatalf("AcquireLease(%q): %v", runID, err)
	}
	return l
}

// takeovers returns the lease_takeover records of a log.
func takeovers(t *testing.T, s polyloop.Store, runID string) []*polyloop.LeaseTakeover {
	t.Helper()
	log, err := polyloop.ReadLog(context.Background(), s, runID)
	if err != nil {
		t.Fatal(err)
	}
	var out []*polyloop.LeaseTakeover
	for _, r := range log.Records {
		if tk, ok := r.Body.(*polyloop.LeaseTakeover); ok {
			out = append(out, tk)
		}
	}
	return out
}

// A live lease refuses Run and Resume before anything is read or written,
// naming the holder; once it is released, both go on and record no
// take-over.
func TestLiveLeaseRefusesRunAndResume(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	exec := newTestExec()
	r := newRunner(scriptmodel.New(call(1, "echo", map[string]string{"text": "a"}), scriptmodel.Reply("done")), store, exec)
	held := takeLease(t, store, "r1", "tok-a")
	_, err := r.Run(ctx, "r1", testAgent(), polyloop.Task{Input: "x"})
	var he *polyloop.LeaseHeldError
	if !errors.Is(err, polyloop.ErrLeaseHeld) || !errors.As(err, &he) || he.Holder.Token != "tok-a" || he.RunID != "r1" {
		t.Fatalf("Run while held: %v, want a *LeaseHeldError naming tok-a", err)
	}
	if store.Len() != 0 || store.Appends() != 0 {
		t.Fatalf("a refused Run wrote %d records in %d appends", store.Len(), store.Appends())
	}
	if exec.count(`echo:{"text":"a"}`) != 0 {
		t.Fatal("a refused Run executed an action")
	}
	held.Release(ctx)
	res, err := r.Run(ctx, "r1", testAgent(), polyloop.Task{Input: "x"})
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("Run after release: %v %v", res.StopReason, err)
	}
	if tk := takeovers(t, store, "r1"); len(tk) != 0 {
		t.Fatalf("a released lease was recorded as taken over: %+v", tk[0])
	}
	// The run released its own lease when it returned.
	takeLease(t, store, "r1", "tok-b").Release(ctx)

	held = takeLease(t, store, "r1", "tok-c")
	defer held.Release(ctx)
	if _, err := r.Resume(ctx, "r1", testAgent()); !errors.Is(err, polyloop.ErrLeaseHeld) {
		t.Fatalf("Resume while held: %v, want ErrLeaseHeld", err)
	}
}

// A dead holder's lease is taken over, and the take-over is recorded with
// the invocation's first write: no extra Append.
func TestDeadHolderTakeOverIsRecorded(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	exec := newTestExec()
	model := scriptmodel.New(call(1, "echo", map[string]string{"text": "a"}), call(2, "echo", map[string]string{"text": "b"}), scriptmodel.Reply("done"))
	store.SetFaults(memstore.Options{CrashAfter: 4}) // run_started, intent, result, action intent
	r := newRunner(model, store, exec)
	if _, err := r.Run(ctx, "r1", testAgent(), polyloop.Task{Input: "x"}); !errors.Is(err, memstore.ErrCrashed) {
		t.Fatalf("Run: %v", err)
	}
	store.SetFaults(memstore.Options{})
	dead := takeLease(t, store, "r1", "tok-dead")
	store.AbandonLease(dead)
	before := store.Appends()
	res, err := r.Resume(ctx, "r1", testAgent())
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("Resume: %v %v", res.StopReason, err)
	}
	tk := takeovers(t, store, "r1")
	if len(tk) != 1 || tk[0].Reason != polyloop.TakeoverHolderDead || tk[0].From.Token != "tok-dead" || tk[0].To.Token == "" {
		t.Fatalf("take-over records: %+v", tk)
	}
	// Replay of step 1's action, step 2, the finish: the same appends as a
	// resume without a take-over (store.Appends counts them).
	clean := memstore.New()
	clean.SetFaults(memstore.Options{CrashAfter: 4})
	r2 := newRunner(scriptmodel.New(call(1, "echo", map[string]string{"text": "a"}), call(2, "echo", map[string]string{"text": "b"}), scriptmodel.Reply("done")), clean, newTestExec())
	_, _ = r2.Run(ctx, "r1", testAgent(), polyloop.Task{Input: "x"})
	clean.SetFaults(memstore.Options{})
	if _, err := r2.Resume(ctx, "r1", testAgent()); err != nil {
		t.Fatal(err)
	}
	if got, want := store.Appends()-before, clean.Appends(); got != want {
		t.Fatalf("the resume with a take-over made %d appends, one without made %d", got, want)
	}
	if _, err := polyloop.PlanResume(mustRead(t, store, "r1")); err != nil {
		t.Fatalf("the log with a take-over does not plan: %v", err)
	}
}

func mustRead(t *testing.T, s polyloop.Store, runID string) polyloop.RunLog {
	t.Helper()
	log, err := polyloop.ReadLog(context.Background(), s, runID)
	if err != nil {
		t.Fatal(err)
	}
	return log
}

// ResumeOptions.TakeOver forces a live holder's lease away: the record says
// forced, and the old holder's Lost closes.
func TestForcedTakeOver(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	store.SetFaults(memstore.Options{CrashAfter: 2})
	r := newRunner(scriptmodel.New(scriptmodel.Reply("done")), store, newTestExec())
	_, _ = r.Run(ctx, "r1", testAgent(), polyloop.Task{Input: "x"})
	store.SetFaults(memstore.Options{})
	live := takeLease(t, store, "r1", "tok-live")
	defer live.Release(ctx)
	res, err := r.ResumeWith(ctx, "r1", testAgent(), polyloop.ResumeOptions{TakeOver: true})
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("forced resume: %v %v", res.StopReason, err)
	}
	select {
	case <-live.Lost():
	default:
		t.Fatal("the holder forced away was not told (Lost is open)")
	}
	tk := takeovers(t, store, "r1")
	if len(tk) != 1 || tk[0].Reason != polyloop.TakeoverForced || tk[0].From.Token != "tok-live" {
		t.Fatalf("take-over records: %+v", tk)
	}
}

// A forced take-over that the resume would refuse anyway — a changed
// agent — is refused before the lease is forced: the live holder goes on,
// undisturbed, and nothing is written.
func TestForcedTakeOverRefusedFirst(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	store.SetFaults(memstore.Options{CrashAfter: 2})
	r := newRunner(scriptmodel.New(scriptmodel.Reply("done")), store, newTestExec())
	_, _ = r.Run(ctx, "r1", testAgent(), polyloop.Task{Input: "x"})
	store.SetFaults(memstore.Options{})
	live := takeLease(t, store, "r1", "tok-live")
	defer live.Release(ctx)
	before := len(mustRead(t, store, "r1").Records)
	changed := testAgent()
	changed.System = "something else"
	_, err := r.ResumeWith(ctx, "r1", changed, polyloop.ResumeOptions{TakeOver: true})
	var mismatch *polyloop.SnapshotMismatchError
	if !errors.As(err, &mismatch) {
		t.Fatalf("forced resume with a changed agent: %v, want a *SnapshotMismatchError", err)
	}
	select {
	case <-live.Lost():
		t.Fatal("the live holder was forced away by a resume that was then refused")
	default:
	}
	if n := len(mustRead(t, store, "r1").Records); n != before {
		t.Fatalf("the refused resume wrote %d records", n-before)
	}
}

// A holder whose lease is taken over while it runs stops: its context is
// cancelled, the action in flight returns, and the error says the lease
// was lost. The new holder's writes are not disturbed.
func TestLostLeaseStopsTheRun(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	inAction := make(chan struct{})
	ex := &hookExec{env: newTestExec(), hook: func(ctx context.Context) error {
		close(inAction)
		<-ctx.Done()
		return ctx.Err()
	}}
	r := newRunner(scriptmodel.New(call(1, "hook", nil), scriptmodel.Reply("done")), store, ex)
	errc := make(chan error, 1)
	go func() {
		_, err := r.Run(ctx, "r1", hookAgent(), polyloop.Task{Input: "x"})
		errc <- err
	}()
	<-inAction
	thief, err := store.AcquireLease(ctx, "r1", polyloop.LeaseRequest{Owner: owner("tok-thief"), TakeOver: true})
	if err != nil {
		t.Fatal(err)
	}
	defer thief.Release(ctx)
	select {
	case err = <-errc:
	case <-time.After(time.Minute): // a watchdog, not a measure
		t.Fatal("the run went on holding a lease taken from it")
	}
	if !errors.Is(err, polyloop.ErrLeaseLost) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after losing its lease: %v, want ErrLeaseLost and context.Canceled", err)
	}
	// Its release left the thief's lease alone.
	if _, err := store.AcquireLease(ctx, "r1", polyloop.LeaseRequest{Owner: owner("tok-3")}); !errors.Is(err, polyloop.ErrLeaseHeld) {
		t.Fatalf("after the old holder returned: %v, want the thief's lease still held", err)
	}
}

// A child run holds its own lease while its parent holds the parent's; a
// parent whose child is live elsewhere cannot be resumed past that child.
func TestChildHoldsItsOwnLease(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	var parentHeld, childHeld error
	childExec := &hookExec{env: newTestExec(), hook: func(context.Context) error {
		for id, dst := range map[string]*error{"p": &parentHeld, "p/1.1": &childHeld} {
			l, err := store.AcquireLease(ctx, id, polyloop.LeaseRequest{Owner: owner("probe")})
			if l != nil {
				l.Release(ctx)
			}
			*dst = err
		}
		return nil
	}}
	childRunner := &polyloop.Runner{Model: scriptmodel.New(call(1, "hook", nil), scriptmodel.Reply("child done")),
		Parser: testParser{}, Executor: childExec, Store: store}
	parent := delegatingParent(childRunner)
	if res, err := parent.Run(ctx, "p", parentAgent(), polyloop.Task{Input: "x"}); err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("parent: %v %v", res.StopReason, err)
	}
	if !errors.Is(parentHeld, polyloop.ErrLeaseHeld) || !errors.Is(childHeld, polyloop.ErrLeaseHeld) {
		t.Fatalf("during the child's action: parent lease %v, child lease %v; want both held", parentHeld, childHeld)
	}

	// A parent crashed in its delegate action, its child live elsewhere.
	store2 := memstore.New()
	store2.SetFaults(memstore.Options{CrashAfter: 4})
	parent.Store, childRunner.Store = store2, store2
	_, _ = parent.Run(ctx, "q", parentAgent(), polyloop.Task{Input: "x"})
	store2.SetFaults(memstore.Options{})
	live, err := store2.AcquireLease(ctx, "q/1.1", polyloop.LeaseRequest{Owner: owner("tok-child-elsewhere")})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Release(ctx)
	_, err = parent.Resume(ctx, "q", parentAgent())
	var he *polyloop.LeaseHeldError
	if !errors.Is(err, polyloop.ErrLeaseHeld) || !errors.As(err, &he) || he.RunID != "q/1.1" {
		t.Fatalf("resuming a parent whose child is live elsewhere: %v, want ErrLeaseHeld naming q/1.1", err)
	}
}

// delegatingParent is a parent runner on the child's store whose step 1
// delegates to one child run of childRunner (agent hookAgent) and whose
// step 2 answers.
func delegatingParent(childRunner *polyloop.Runner) *polyloop.Runner {
	pexec := &delegateExec{env: newTestExec()}
	pexec.invoke = func(ctx context.Context) (string, error) {
		res, err := polyloop.InvokeChild(ctx, polyloop.Child{Runner: childRunner, Agent: hookAgent()}, polyloop.Task{Input: "sub"}, polyloop.Receive[polyloop.RunResult]{})
		return res.FinalAnswer, err
	}
	return &polyloop.Runner{Model: scriptmodel.New(call(1, "delegate", nil), scriptmodel.Reply("parent done")),
		Parser: testParser{}, Executor: pexec, Store: childRunner.Store}
}

// Resuming a parent whose open action has a child live elsewhere is
// refused before anything is written, whatever the action's replay
// policy: the child is still being driven, and the action's outcome with
// it.
func TestParentWithLiveChildRefusedUpFront(t *testing.T) {
	for _, policy := range []polyloop.ReplayPolicy{polyloop.ReplaySafe, polyloop.NeverReplay} {
		t.Run(string(policy), func(t *testing.T) {
			ctx := context.Background()
			store := memstore.New()
			// Parent: run_started, intent, result, action intent; child:
			// run_started, intent. The child's next write crashes.
			store.SetFaults(memstore.Options{CrashAfter: 6})
			childRunner := &polyloop.Runner{Model: scriptmodel.New(call(1, "echo", map[string]string{"text": "c"}), scriptmodel.Reply("child done")),
				Parser: testParser{}, Executor: newTestExec(), Store: store}
			parent := delegatingParent(childRunner)
			agent := parentAgent()
			for i := range agent.Tools {
				if agent.Tools[i].Name == "delegate" {
					agent.Tools[i].Replay = policy
				}
			}
			if _, err := parent.Run(ctx, "q", agent, polyloop.Task{Input: "x"}); !errors.Is(err, memstore.ErrCrashed) {
				t.Fatalf("parent: %v", err)
			}
			store.SetFaults(memstore.Options{})
			if mustRead(t, store, "q/1.1").Empty() {
				t.Fatal("the child has no records: the fixture is wrong")
			}
			live := takeLease(t, store, "q/1.1", "tok-child-elsewhere")
			defer live.Release(ctx)
			before := len(mustRead(t, store, "q").Records)
			_, err := parent.Resume(ctx, "q", agent)
			var he *polyloop.LeaseHeldError
			if !errors.As(err, &he) || he.RunID != "q/1.1" || he.Holder.Token != "tok-child-elsewhere" {
				t.Fatalf("resume: %v, want ErrLeaseHeld naming q/1.1's holder", err)
			}
			if after := len(mustRead(t, store, "q").Records); after != before {
				t.Fatalf("the refused resume wrote %d records", after-before)
			}
			// A take-over of the parent takes the child too.
			res, err := parent.ResumeWith(ctx, "q", agent, polyloop.ResumeOptions{TakeOver: true})
			want := polyloop.StopCompleted
			if policy == polyloop.NeverReplay {
				want = polyloop.StopResumeStateUnknown
			}
			if err != nil || res.StopReason != want {
				t.Fatalf("resume --take-over: %v %v, want %s", res.StopReason, err, want)
			}
			if policy == polyloop.ReplaySafe {
				tk := takeovers(t, store, "q/1.1")
				if len(tk) != 1 || tk[0].Reason != polyloop.TakeoverForced || tk[0].From.Token != "tok-child-elsewhere" {
					t.Fatalf("the child's take-over records: %+v", tk)
				}
			}
		})
	}
}
