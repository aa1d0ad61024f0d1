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

// gateAgent: "send" needs approval (never_replay), "book" is deferred, with
// a deadline of an hour each.
func gateAgent() polyloop.Agent {
	a := testAgent()
	for i := range a.Tools {
		if a.Tools[i].Name == "send" {
			a.Tools[i].Approval, a.Tools[i].Deadline = polyloop.ApprovalRequired, time.Hour
		}
	}
	a.Tools = append(a.Tools, polyloop.ToolSpec{Name: "book", Deferred: true, Deadline: time.Hour})
	return a
}

func gateScript() *scriptmodel.Client {
	return scriptmodel.New(
		batchTurn(1, "send", "echo", "send"),
		call(2, "echo", map[string]string{"text": "after"}),
		scriptmodel.Reply("done"),
	)
}

func count(log polyloop.RunLog, kind polyloop.RecordKind) int {
	n := 0
	for _, r := range log.Records {
		if r.Kind() == kind {
			n++
		}
	}
	return n
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// Approval from end to end: a batch with two gated calls suspends once and
// lists both (the plain action between them waits its turn); a resume before
// the answers asks nothing again; an allowed action runs once, a denied one
// never; a second answer is refused.
func TestApprovalFlow(t *testing.T) {
	ctx := context.Background()
	store, exec := memstore.New(), newTestExec()
	runner := func() *polyloop.Runner { return newRunner(gateScript(), store, exec) }
	res, err := runner().Run(ctx, "g", gateAgent(), polyloop.Task{Input: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != "" || res.Suspended == nil || len(res.Suspended.Approvals) != 2 {
		t.Fatalf("result %+v: want the run suspended on two approvals", res)
	}
	if n := len(exec.snapshot()); n != 0 {
		t.Fatalf("ledger %v: in order, nothing runs before the first gate is answered", exec.snapshot())
	}
	again, err := runner().Resume(ctx, "g", gateAgent())
	if err != nil || again.Suspended == nil {
		t.Fatalf("resume before the answers: %+v, %v", again, err)
	}
	log, _ := polyloop.ReadLog(ctx, store, "g")
	if n := count(log, polyloop.KindApprovalRequested); n != 2 {
		t.Fatalf("%d approval requests, want 2: never asked twice", n)
	}
	first, second := res.Suspended.Approvals[0], res.Suspended.Approvals[1]
	if err := runner().Approve(ctx, "g", first.ActionID, polyloop.ApprovalDecision{Allow: true, By: "ana"}); err != nil {
		t.Fatal(err)
	}
	// By the provider's tool-call id, too.
	if err := runner().Approve(ctx, "g", second.Action.CallID, polyloop.ApprovalDecision{Allow: false, By: "ana", Note: "not to bob"}); err != nil {
		t.Fatal(err)
	}
	err = runner().Approve(ctx, "g", first.ActionID, polyloop.ApprovalDecision{Allow: false})
	if !errors.Is(err, polyloop.ErrAlreadyAnswered) {
		t.Fatalf("a second decision: %v, want ErrAlreadyAnswered", err)
	}
	if err := runner().Approve(ctx, "g", "a9", polyloop.ApprovalDecision{}); !errors.Is(err, polyloop.ErrNoPendingGate) {
		t.Fatalf("an unknown action: %v, want ErrNoPendingGate", err)
	}
	fin, err := runner().Resume(ctx, "g", gateAgent())
	if err != nil || fin.StopReason != polyloop.StopCompleted {
		t.Fatalf("resume after the answers: %+v, %v", fin, err)
	}
	if exec.count(`send:{"to":"s1-0"}`) != 1 || exec.count(`send:{"to":"s1-2"}`) != 0 {
		t.Fatalf("ledger %v: the allowed send runs once, the denied one never", exec.snapshot())
	}
	log, _ = polyloop.ReadLog(ctx, store, "g")
	for _, m := range polyloop.History(log) {
		if m.Role == polyloop.RoleTool && m.ToolCallID == second.Action.CallID && m.Content != polyloop.DefaultDenied {
			t.Fatalf("the denied action's observation is %q", m.Content)
		}
	}
}

// Crash at every record boundary around a gate (before the request lands,
// between request and decision, after the decision, during the approved
// action): resume never asks twice, never runs a denied action, and never
// runs an approved never_replay action twice.
func TestApprovalCrashAtEveryRecord(t *testing.T) {
	ctx := context.Background()
	for _, allow := range []bool{true, false} {
		for k := 1; k < 40; k++ {
			store := memstore.NewWithOptions(memstore.Options{CrashAfter: k})
			exec := newTestExec()
			runner := func() *polyloop.Runner { return newRunner(gateScript(), store, exec) }
			agent := gateAgent()
			crashes := 0
			step := func(f func() error) {
				for {
					err := f()
					if errors.Is(err, memstore.ErrCrashed) {
						crashes++
						store.SetFaults(memstore.Options{})
						continue
					}
					if err != nil && !errors.Is(err, polyloop.ErrAlreadyAnswered) {
						t.Fatalf("k=%d: %v", k, err)
					}
					return
				}
			}
			var res polyloop.RunResult
			step(func() (err error) {
				res, err = runner().Run(ctx, "g", agent, polyloop.Task{Input: "t"})
				if errors.Is(err, memstore.ErrCrashed) {
					store.SetFaults(memstore.Options{})
					res, err = continueRun(runner(), store, "g", agent, "t")
				}
				return err
			})
			for res.Suspended != nil {
				for _, g := range res.Suspended.Approvals {
					step(func() error {
						return runner().Approve(ctx, "g", g.ActionID, polyloop.ApprovalDecision{Allow: allow})
					})
				}
				step(func() (err error) { res, err = runner().Resume(ctx, "g", agent); return err })
			}
			log, _ := polyloop.ReadLog(ctx, store, "g")
			if n := count(log, polyloop.KindApprovalRequested); n != 2 {
				t.Fatalf("k=%d: %d approval requests, want 2", k, n)
			}
			for key, n := range exec.ledgerFor("send") {
				if !allow || n > 1 {
					t.Fatalf("k=%d allow=%v: %s executed %d times", k, allow, key, n)
				}
			}
			if res.StopReason != polyloop.StopCompleted && res.StopReason != polyloop.StopResumeStateUnknown {
				t.Fatalf("k=%d: %+v", k, res)
			}
			if k == 39 && crashes > 0 {
				t.Fatalf("k=%d crashed: raise the bound so that the last crash point is past the run", k)
			}
		}
	}
}

// Deadlines are compared with the clock once, at resume: before the deadline
// the run stays suspended; exactly at it and after it, the approval is
// denied and the decision records the clock it saw.
func TestApprovalDeadline(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		after   time.Duration
		timeout bool
	}{{59 * time.Minute, false}, {time.Hour, true}, {5 * time.Hour, true}} {
		t.Run(tc.after.String(), func(t *testing.T) {
			store, exec, c := memstore.New(), newTestExec(), &clock{start}
			r := newRunner(scriptmodel.New(call(1, "send", map[string]string{"to": "x"}), scriptmodel.Reply("done")), store, exec)
			r.Clock = c.now
			if res, err := r.Run(ctx, "d", gateAgent(), polyloop.Task{Input: "t"}); err != nil || res.Suspended == nil {
				t.Fatalf("%+v, %v", res, err)
			}
			c.t = start.Add(tc.after)
			res, err := r.Resume(ctx, "d", gateAgent())
			if err != nil {
				t.Fatal(err)
			}
			log, _ := polyloop.ReadLog(ctx, store, "d")
			decided := count(log, polyloop.KindApprovalDecided)
			if !tc.timeout {
				if res.Suspended == nil || decided != 0 {
					t.Fatalf("before the deadline: %+v, %d decisions", res, decided)
				}
				return
			}
			var d *polyloop.ApprovalDecided
			for _, rec := range log.Records {
				if b, ok := rec.Body.(*polyloop.ApprovalDecided); ok {
					d = b
				}
			}
			if d == nil || !d.Timeout || d.Allow || !d.Clock.Equal(c.t) || res.StopReason != polyloop.StopCompleted {
				t.Fatalf("after the deadline: %+v, decision %+v", res, d)
			}
			if len(exec.ledgerFor("send")) != 0 {
				t.Fatal("an action whose approval timed out ran")
			}
		})
	}
}

// A deferred tool's result is delivered from outside and settled as if the
// executor had returned it; the executor never runs it.
func TestDeferredDelivery(t *testing.T) {
	ctx := context.Background()
	store, exec := memstore.New(), newTestExec()
	model := func() *scriptmodel.Client {
		return scriptmodel.New(scriptmodel.Turn{ToolCalls: []polyloop.ToolCall{{ID: "b1", Name: "book", Args: []byte(`{"room":"7"}`)}}}, scriptmodel.Reply("booked"))
	}
	res, err := newRunner(model(), store, exec).Run(ctx, "h", gateAgent(), polyloop.Task{Input: "t"})
	if err != nil || res.Suspended == nil || len(res.Suspended.Deliveries) != 1 {
		t.Fatalf("%+v, %v", res, err)
	}
	err = newRunner(model(), store, exec).Deliver(ctx, "h", "b1", polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "room 7 booked"}, "hotel webhook")
	if err != nil {
		t.Fatal(err)
	}
	res, err = newRunner(model(), store, exec).Resume(ctx, "h", gateAgent())
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("%+v, %v", res, err)
	}
	if n := len(exec.snapshot()); n != 0 {
		t.Fatalf("the executor ran %d actions for a deferred tool", n)
	}
	log, _ := polyloop.ReadLog(ctx, store, "h")
	h := polyloop.History(log)
	if got := h[len(h)-2]; got.Role != polyloop.RoleTool || got.Content != "room 7 booked" || got.ToolCallID != "b1" {
		t.Fatalf("the delivered result in the history: %+v", got)
	}
	if res.Totals.UnknownActions != 0 || res.Totals.Actions != 1 {
		t.Fatalf("totals %+v", res.Totals)
	}
}

// An approval policy decides per action; its name is in the snapshot.
func TestApprovalPolicy(t *testing.T) {
	ctx := context.Background()
	agent := testAgent()
	for i := range agent.Tools {
		if agent.Tools[i].Name == "echo" {
			agent.Tools[i].Approval = polyloop.ApprovalByPolicy
		}
	}
	agent.ApprovalPolicy = &polyloop.ApprovalPolicy{Name: "no-secrets", Needs: func(a polyloop.Action) bool {
		return string(a.Args) == `{"text":"secret"}`
	}}
	store := memstore.New()
	model := scriptmodel.New(call(1, "echo", map[string]string{"text": "hello"}), call(2, "echo", map[string]string{"text": "secret"}))
	res, err := newRunner(model, store, newTestExec()).Run(ctx, "p", agent, polyloop.Task{Input: "t"})
	if err != nil || res.Suspended == nil || res.Suspended.Approvals[0].Step != 2 {
		t.Fatalf("%+v, %v: the policy gates step 2 only", res, err)
	}
	log, _ := polyloop.ReadLog(ctx, store, "p")
	if log.Started().Snapshot.ApprovalPolicy != "no-secrets" {
		t.Fatal("the policy's name is not in the snapshot")
	}
	noPolicy := agent
	noPolicy.ApprovalPolicy = nil
	if _, err := newRunner(model, memstore.New(), newTestExec()).Run(ctx, "q", noPolicy, polyloop.Task{Input: "t"}); !errors.Is(err, polyloop.ErrInvalidConfig) {
		t.Fatalf("approval by policy without a policy: %v", err)
	}
}

// Fields added to the snapshot since 1.0 (gates, parallel actions) are
// omitted when unused: a snapshot stored by 1.0 decodes and hashes to its
// stored hash, so resuming an old run finds no configuration change.
func TestSnapshot10HashStable(t *testing.T) {
	old := readJSONL(t, "testdata/logs/v1.0-reference.jsonl").Started()
	if h, err := old.Snapshot.Hash(); err != nil || h != old.SnapshotHash {
		t.Fatalf("the 1.0 snapshot hashes to %s, stored %s (%v)", h, old.SnapshotHash, err)
	}
}

// blockingExec holds the first action of tool until released.
type blockingExec struct {
	inner            polyloop.ActionExecutor
	tool             string
	started, release chan struct{}
}

func (b *blockingExec) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	if a.Tool == b.tool && b.started != nil {
		close(b.started)
		b.started = nil
		<-b.release
	}
	return b.inner.Execute(ctx, a)
}

// An answer while a process drives the run — an earlier action of the
// batch still running, the later one listed as waiting — is refused by the
// run's lease, and nothing is written: the running action's outcome lands,
// and after the run suspends the answer is taken and the run completes,
// each action run once.
func TestAnswerWhileTheRunIsDriven(t *testing.T) {
	ctx := context.Background()
	store, ledger := memstore.New(), newTestExec()
	exec := &blockingExec{inner: ledger, tool: "echo", started: make(chan struct{}), release: make(chan struct{})}
	model := func() *scriptmodel.Client {
		return scriptmodel.New(batchTurn(1, "echo", "send"), scriptmodel.Reply("done"))
	}
	started := exec.started
	done := make(chan polyloop.RunResult, 1)
	go func() {
		res, err := newRunner(model(), store, exec).Run(ctx, "live", gateAgent(), polyloop.Task{Input: "t"})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	<-started
	log := mustRead(t, store, "live")
	log.RunID = "live"
	pending, err := polyloop.PendingGates(log)
	if err != nil || len(pending.Approvals) != 1 {
		t.Fatalf("while echo runs: %+v, %v; want the send waiting", pending, err)
	}
	before := len(mustRead(t, store, "live").Records)
	err = newRunner(model(), store, ledger).Approve(ctx, "live", pending.Approvals[0].ActionID, polyloop.ApprovalDecision{Allow: true, By: "ana"})
	if !errors.Is(err, polyloop.ErrLeaseHeld) {
		t.Fatalf("an answer while the run is driven: %v, want ErrLeaseHeld", err)
	}
	if n := len(mustRead(t, store, "live").Records); n != before {
		t.Fatalf("the refused answer wrote %d records", n-before)
	}
	close(exec.release)
	res := <-done
	if res.Suspended == nil {
		t.Fatalf("%+v: want the run suspended at the send", res)
	}
	if err := newRunner(model(), store, ledger).Approve(ctx, "live", pending.Approvals[0].ActionID, polyloop.ApprovalDecision{Allow: true, By: "ana"}); err != nil {
		t.Fatal(err)
	}
	res, err = newRunner(model(), store, exec).Resume(ctx, "live", gateAgent())
	if err != nil || res.StopReason != polyloop.StopCompleted || res.Totals.UnknownActions != 0 {
		t.Fatalf("resume: %+v, %v", res, err)
	}
	if ledger.count(`echo:{"text":"s1-0"}`) != 1 || ledger.count(`send:{"to":"s1-1"}`) != 1 {
		t.Fatalf("ledger %v: each action once", ledger.snapshot())
	}
}

// Deadlines bind the answers too: an answer at or after its gate's deadline
// is refused, nothing written; and a resume after the deadlines records the
// timeout of every gate of a serial batch, not only of the first one it
// waits at. A second answer after the step closed is ErrAlreadyAnswered.
func TestAnswersAndDeadlines(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	store, exec, c := memstore.New(), newTestExec(), &clock{start}
	r := newRunner(scriptmodel.New(batchTurn(1, "send", "send"), scriptmodel.Reply("done")), store, exec)
	r.Clock = c.now
	res, err := r.Run(ctx, "d", gateAgent(), polyloop.Task{Input: "t"})
	if err != nil || res.Suspended == nil || len(res.Suspended.Approvals) != 2 {
		t.Fatalf("%+v, %v", res, err)
	}
	first, second := res.Suspended.Approvals[0].ActionID, res.Suspended.Approvals[1].ActionID
	c.t = start.Add(time.Hour)
	before := len(mustRead(t, store, "d").Records)
	if err := r.Approve(ctx, "d", first, polyloop.ApprovalDecision{Allow: true}); !errors.Is(err, polyloop.ErrDeadlinePassed) {
		t.Fatalf("an answer at the deadline: %v, want ErrDeadlinePassed", err)
	}
	if n := len(mustRead(t, store, "d").Records); n != before {
		t.Fatalf("the refused answer wrote %d records", n-before)
	}
	res, err = r.Resume(ctx, "d", gateAgent())
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("resume after the deadlines: %+v, %v", res, err)
	}
	log := mustRead(t, store, "d")
	var timeouts []string
	for _, rec := range log.Records {
		if d, ok := rec.Body.(*polyloop.ApprovalDecided); ok && d.Timeout && d.Clock.Equal(c.t) {
			timeouts = append(timeouts, d.ActionID)
		}
	}
	if len(timeouts) != 2 || timeouts[0] != first || timeouts[1] != second {
		t.Fatalf("timeouts %v, want both gates of the batch, in order", timeouts)
	}
	if len(exec.ledgerFor("send")) != 0 {
		t.Fatal("an action whose approval timed out ran")
	}
	if err := r.Approve(ctx, "d", second, polyloop.ApprovalDecision{Allow: true}); !errors.Is(err, polyloop.ErrAlreadyAnswered) {
		t.Fatalf("an answer after the step closed: %v, want ErrAlreadyAnswered", err)
	}
}
