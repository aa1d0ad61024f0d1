package trajectory_test

import (
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/runfixture"
	"github.com/polyloop/polyloop/internal/trajectory"
	"github.com/polyloop/polyloop/memstore"
)

// TestGatesInTheirSteps: each gate record lands in its step — the request
// with the action and deadline, the answer with who and why, a timeout as
// such — and an action settled at its gate (denied, delivered), which has
// no intent, is an action of the step with its outcome.
func TestGatesInTheirSteps(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	runfixture.Gated(t, st, runfixture.NewClock(runfixture.Base))
	tr := load(t, st, runfixture.GatedRun)
	if len(tr.Steps) != 3 || tr.Awaiting != nil {
		t.Fatalf("%d steps, awaiting %+v", len(tr.Steps), tr.Awaiting)
	}
	gates := map[string]*trajectory.Gate{}
	for _, s := range tr.Steps {
		for _, g := range s.Gates {
			if g.Step != s.Step {
				t.Errorf("gate %s of step %d is in step %d", g.ActionID, g.Step, s.Step)
			}
			gates[g.ActionID] = g
		}
	}
	check := func(id string, approval bool, ok func(*trajectory.Gate) bool) {
		t.Helper()
		g := gates[id]
		switch {
		case g == nil:
			t.Errorf("no gate for %s", id)
		case g.Approval() != approval || g.Deadline == nil || g.Waiting() || g.AnswerSeq <= g.Seq || !ok(g):
			t.Errorf("gate %s: %+v, decision %+v, delivery %+v", id, g, g.Decision, g.Delivery)
		}
	}
	check("a1.1", true, func(g *trajectory.Gate) bool {
		return g.Decision.Allow && g.Decision.By == "ana" && g.Decision.Note == "fine"
	})
	check("a1.3", true, func(g *trajectory.Gate) bool {
		return !g.Decision.Allow && g.Decision.Note == "not to bob" && !g.TimedOut()
	})
	check("a1.2", false, func(g *trajectory.Gate) bool {
		return g.Delivery.By == "hotel webhook" && g.Delivery.Outcome.Observation == "room 7 booked"
	})
	check("a2", true, func(g *trajectory.Gate) bool { return g.TimedOut() && !g.Decision.Allow && g.Decision.Clock != nil })

	acts := map[string]*trajectory.Action{}
	for _, a := range tr.Steps[0].Actions {
		acts[a.ActionID] = a
	}
	if a := acts["a1.1"]; a == nil || a.Attempt != 1 || a.Gate != gates["a1.1"] || a.Settled == nil || a.Settled.Observation != "sent to ana" {
		t.Errorf("the approved action: %+v", a)
	}
	if a := acts["a1.2"]; a == nil || a.Attempt != 0 || a.Unknown || a.Gate != gates["a1.2"] || a.Settled == nil || a.Settled.Observation != "room 7 booked" || a.Index != 1 || a.Of != 3 {
		t.Errorf("the delivered action, settled without an intent: %+v", a)
	}
	if a := acts["a1.3"]; a == nil || a.Unknown || a.Settled == nil || a.Settled.Outcome.Status != polyloop.NotExecuted || !a.Settled.Synthetic || a.Settled.Audit != "not to bob" {
		t.Errorf("the denied action, settled without an intent: %+v", a)
	}
}

// TestAwaitingGates: a suspended run lists what it waits for, and its
// gates wait in their step.
func TestAwaitingGates(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	runfixture.Gated(t, st, runfixture.NewClock(runfixture.Base))
	tr := load(t, st, runfixture.SuspendedRun)
	if tr.Awaiting == nil || len(tr.Awaiting.Approvals) != 1 || len(tr.Awaiting.Deliveries) != 1 || tr.Finished != nil {
		t.Fatalf("awaiting %+v", tr.Awaiting)
	}
	if a := tr.Awaiting.Approvals[0]; a.ActionID != "a1.2" || a.Action.Tool != "send" || a.Deadline == nil {
		t.Errorf("the approval awaited: %+v", a)
	}
	var waiting []string
	for _, g := range tr.Steps[0].Gates {
		if g.Waiting() {
			waiting = append(waiting, g.ActionID)
		}
	}
	if strings.Join(waiting, ",") != "a1.2,a1.3" {
		t.Errorf("gates waiting in step 1: %q", waiting)
	}
}

// TestInvocationsOfGates: an answer is a write of its own, named for who
// answered; a timeout is a resume's; what follows an answer is a resume.
func TestInvocationsOfGates(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	runfixture.Gated(t, st, runfixture.NewClock(runfixture.Base))
	inv := load(t, st, runfixture.GatedRun).Invocations
	var got []string
	for _, i := range inv {
		got = append(got, i.Evidence)
	}
	want := []string{
		"run started",
		"approve: a1.1 allowed by ana",
		"approve: a1.3 denied by ana",
		"deliver: a1.2 delivered by hotel webhook, executed",
		"resume after the gates' answers: step 1 goes on, action a1.1 started",
		"resume after the deadline: the approval of a2 timed out (denied)",
	}
	if len(got) != len(want) {
		t.Fatalf("invocations %q, want %d", got, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("invocation %d: %q, want %q…", i+1, got[i], want[i])
		}
	}
}

// TestTakeoverInTheLog: a take-over keeps its place in the log, and the
// invocation it begins says who took the run from whom.
func TestTakeoverInTheLog(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	runfixture.TakenOver(t, st, runfixture.NewClock(runfixture.Base))
	tr := load(t, st, runfixture.TakeoverRun)
	if len(tr.Takeovers) != 1 || tr.Takeovers[0].Seq != 4 || tr.Takeovers[0].Reason != polyloop.TakeoverForced || tr.Takeovers[0].From.Host != "stuck-host" {
		t.Fatalf("take-overs %+v", tr.Takeovers)
	}
	if len(tr.Invocations) != 2 || tr.Invocations[1].FirstSeq != 4 || !strings.Contains(tr.Invocations[1].Evidence, "from stuck-host (pid 4242): forced") {
		t.Fatalf("invocations %+v", tr.Invocations)
	}
}
