package runfixture

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/funcexec"
	"github.com/polyloop/polyloop/scriptmodel"
)

// IDs of the runs Gated and TakenOver write.
const (
	GatedRun     = "gated-1"
	SuspendedRun = "suspended-1"
	TakeoverRun  = "takeover-1"
)

// SendArgs are the arguments of the gated tools.
type SendArgs struct {
	To string `json:"to"`
}

// GateAgent is the fixture's agent with two gated tools: send needs a
// person's approval within an hour (never_replay), book is deferred (its
// result is delivered from outside) within two hours.
func GateAgent() polyloop.Agent {
	a := Agent("delta", "You send and book.")
	a.Tools = GateExecutor().ToolSpecs()
	for i := range a.Tools {
		switch a.Tools[i].Name {
		case "send":
			a.Tools[i].Approval, a.Tools[i].Deadline = polyloop.ApprovalRequired, time.Hour
		case "book":
			a.Tools[i].Deferred, a.Tools[i].Deadline = true, 2*time.Hour
		}
	}
	return a
}

// GateExecutor is Executor with send, which answers "sent to TO", and
// book, which a deferred tool's executor never runs (its results are
// delivered): it fails if run.
func GateExecutor() *funcexec.Executor {
	ex := withTools(funcexec.New())
	must(funcexec.Register(ex, "send", "Sends a message.", polyloop.NeverReplay,
		func(_ context.Context, a SendArgs) (string, error) { return "sent to " + a.To, nil }))
	must(funcexec.Register(ex, "book", "Books a room (answered from outside).", polyloop.NeverReplay,
		func(_ context.Context, a BookArgs) (string, error) {
			return "", errors.New("book is deferred: the executor never runs it")
		}))
	return ex
}

// BookArgs are the arguments of book.
type BookArgs struct {
	Room string `json:"room"`
}

// Send is a turn calling send to someone.
func Send(id, to string) scriptmodel.Turn { return scriptmodel.Call(id, "send", SendArgs{To: to}) }

// Book is a turn calling the deferred book tool.
func Book(id, room string) scriptmodel.Turn {
	return scriptmodel.Call(id, "book", BookArgs{Room: room})
}

// GateRunner is Runner with GateExecutor.
func GateRunner(st polyloop.Store, clock *Clock, turns ...scriptmodel.Turn) *polyloop.Runner {
	r := Runner(st, clock, 0.000001, turns...)
	r.Executor = GateExecutor()
	return r
}

// Gated writes two runs of GateAgent into st:
//   - GatedRun: step 1 is a batch of send to ana (approved by ana, "fine"),
//     book room 7 (delivered by the hotel webhook) and send to bob (denied
//     by ana, "not to bob"); step 2 sends to carol, whose approval times
//     out at a resume after the deadline; step 3 answers; completed.
//   - SuspendedRun: a batch of echo, send to dan and book room 9, waiting
//     for an approval and a delivery (deadlines one and two hours after
//     the request).
func Gated(tb testing.TB, st polyloop.Store, clock *Clock) {
	tb.Helper()
	ctx := context.Background()
	turns := []scriptmodel.Turn{Batch(Send("c1", "ana"), Book("c2", "7"), Send("c3", "bob")), Send("c4", "carol"), scriptmodel.Reply("sent and booked")}
	agent := GateAgent()
	if res := Run(tb, GateRunner(st, clock, turns...), GatedRun, agent, "Send to ana and bob, book room 7."); res.Suspended == nil {
		tb.Fatalf("run %s: %+v, want it suspended", GatedRun, res)
	}
	r := GateRunner(st, clock, turns...)
	for _, answer := range []func() error{
		func() error {
			return r.Approve(ctx, GatedRun, "c1", polyloop.ApprovalDecision{Allow: true, By: "ana", Note: "fine"})
		},
		func() error {
			return r.Approve(ctx, GatedRun, "c3", polyloop.ApprovalDecision{Allow: false, By: "ana", Note: "not to bob"})
		},
		func() error {
			return r.Deliver(ctx, GatedRun, "c2", polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "room 7 booked"}, "hotel webhook")
		},
	} {
		if err := answer(); err != nil {
			tb.Fatalf("run %s: answering a gate: %v", GatedRun, err)
		}
	}
	res, err := r.Resume(ctx, GatedRun, agent)
	if err != nil || res.Suspended == nil {
		tb.Fatalf("resume %s: %+v, %v: want it suspended at step 2", GatedRun, res, err)
	}
	clock.Skip(2 * time.Hour)
	if res, err = r.Resume(ctx, GatedRun, agent); err != nil || res.StopReason != polyloop.StopCompleted {
		tb.Fatalf("resume %s after the deadline: %+v, %v", GatedRun, res, err)
	}

	clock.Skip(time.Minute)
	res = Run(tb, GateRunner(st, clock, Batch(Echo("c1", "hi"), Send("c2", "dan"), Book("c3", "9"))), SuspendedRun, agent, "Say hi, send to dan, book room 9.")
	if res.Suspended == nil || len(res.Suspended.Approvals) != 1 || len(res.Suspended.Deliveries) != 1 {
		tb.Fatalf("run %s: %+v, want it suspended on an approval and a delivery", SuspendedRun, res)
	}
}

// TakenOver writes TakeoverRun into st, which must be a polyloop.Leaser:
// killed during step 1's action, then resumed with ResumeOptions.TakeOver
// while another holder ("stuck-host", pid 4242) holds its lease — a forced
// take-over, recorded — and completed.
func TakenOver(tb testing.TB, st polyloop.Store, clock *Clock) {
	tb.Helper()
	ctx := context.Background()
	leaser, ok := st.(polyloop.Leaser)
	if !ok {
		tb.Fatalf("runfixture.TakenOver: %T is not a polyloop.Leaser", st)
	}
	turns := []scriptmodel.Turn{Echo("c1", "one"), scriptmodel.Reply("one echoed")}
	agent := Agent("alpha", "You echo.")
	Crashed(tb, st, clock, 4, TakeoverRun, agent, "Echo one, again.", turns...)
	stuck, err := leaser.AcquireLease(ctx, TakeoverRun, polyloop.LeaseRequest{Owner: polyloop.LeaseOwner{Host: "stuck-host", PID: 4242, Token: "tok-stuck", Since: clock.Now()}})
	if err != nil {
		tb.Fatalf("lease of %s: %v", TakeoverRun, err)
	}
	defer stuck.Release(context.WithoutCancel(ctx))
	clock.Skip(10 * time.Minute)
	res, err := Runner(st, clock, 0.000001, turns...).ResumeWith(ctx, TakeoverRun, agent, polyloop.ResumeOptions{TakeOver: true})
	if err != nil || res.StopReason != polyloop.StopCompleted {
		tb.Fatalf("resume %s taking it over: %+v, %v", TakeoverRun, res, err)
	}
}
