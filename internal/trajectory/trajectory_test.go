package trajectory_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/runfixture"
	"github.com/polyloop/polyloop/internal/trajectory"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
)

func load(t *testing.T, st *memstore.Store, id string) *trajectory.Trajectory {
	t.Helper()
	tr, err := trajectory.Load(context.Background(), st, id)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestBatchActionsKeepTheirOutcomes: every action of a batch carries its
// own settlement — the ones settled by action_result records too.
func TestBatchActionsKeepTheirOutcomes(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	runfixture.Populate(t, st)
	tr := load(t, st, runfixture.BatchRun)
	if len(tr.Steps) != 3 {
		t.Fatalf("%d steps", len(tr.Steps))
	}
	acts := tr.Steps[0].Actions
	if len(acts) != 2 {
		t.Fatalf("step 1: %d actions", len(acts))
	}
	for i, a := range acts {
		if a.Unknown || a.Settled == nil || a.Index != i || a.Of != 2 {
			t.Fatalf("action %d: unknown %v, settled %v, index %d of %d", i, a.Unknown, a.Settled, a.Index, a.Of)
		}
	}
	if s := acts[0].Settled; s.Outcome.Status != polyloop.Executed || s.Observation != "hello" || s.Synthetic {
		t.Errorf("echo: %+v", s)
	}
	if s := acts[1].Settled; s.Outcome.Status != polyloop.NotExecuted || !s.Synthetic || s.Audit == "" {
		t.Errorf("unknown tool: %+v (want not_executed, synthetic, with the executor's audit text)", s)
	}
	if acts[0].SettledSeq == acts[1].SettledSeq {
		t.Errorf("both actions settled by record %d", acts[0].SettledSeq)
	}
	if tr.Finished == nil || tr.Finished.StopReason != polyloop.StopCompleted || tr.Plan != nil {
		t.Errorf("finish: %+v, plan %+v", tr.Finished, tr.Plan)
	}
}

func TestUnfinishedRunShowsUnknownAndPlan(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	runfixture.Populate(t, st)
	tr := load(t, st, runfixture.UnfinishedRun)
	last := tr.Steps[len(tr.Steps)-1]
	if len(last.Actions) != 1 || !last.Actions[0].Unknown {
		t.Fatalf("step %d: actions %+v, want one of unknown outcome", last.Step, last.Actions)
	}
	if tr.Finished != nil || tr.Plan == nil || tr.Plan.Action != polyloop.PlanReplayAction {
		t.Errorf("finished %v, plan %+v", tr.Finished, tr.Plan)
	}
}

func TestResumedRunMarksReplay(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	runfixture.Populate(t, st)
	tr := load(t, st, runfixture.ResumedRun)
	acts := tr.Steps[1].Actions
	if len(acts) != 2 || !acts[0].Unknown || !acts[0].Replayed || acts[1].Unknown || acts[1].Attempt != 2 {
		t.Fatalf("step 2 actions: %+v %+v", acts[0], acts[len(acts)-1])
	}
}

func TestOverrideDiff(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	runfixture.Populate(t, st)
	tr := load(t, st, runfixture.OverriddenRun)
	if len(tr.Overrides) != 1 {
		t.Fatalf("%d overrides", len(tr.Overrides))
	}
	o := tr.Overrides[0]
	if len(o.Diff) == 0 || !strings.HasPrefix(o.Diff[0], "system") {
		t.Errorf("diff %q, want the system prompt", o.Diff)
	}
}

// TestInvocations: an uninterrupted run is one invocation, whatever its
// batches; each resume starts one, named by its first record.
func TestInvocations(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	runfixture.Populate(t, st)
	for _, tt := range []struct {
		id       string
		n        int
		evidence string
	}{
		{runfixture.BatchRun, 1, ""},
		{runfixture.FailedRun, 1, ""},
		{runfixture.UnfinishedRun, 1, ""},
		{runfixture.ResumedRun, 2, "action a2 replayed (attempt 2"},
		{runfixture.OverriddenRun, 2, "changed configuration"},
	} {
		inv := load(t, st, tt.id).Invocations
		if len(inv) != tt.n {
			t.Errorf("%s: %d invocations, want %d: %+v", tt.id, len(inv), tt.n, inv)
			continue
		}
		if inv[0].Evidence != "run started" || inv[0].FirstSeq != 0 {
			t.Errorf("%s: first invocation %+v", tt.id, inv[0])
		}
		if tt.n > 1 {
			second := inv[1]
			if !strings.Contains(second.Evidence, tt.evidence) || second.Gap < time.Hour || second.FirstSeq != inv[0].LastSeq+1 {
				t.Errorf("%s: second invocation %+v, want evidence %q after a gap of an hour or more", tt.id, second, tt.evidence)
			}
		}
	}
}

// TestInvocationsOfBatches: sequential and parallel batches, invalid and
// final decisions, run without interruption, are one invocation each.
func TestInvocationsOfBatches(t *testing.T) {
	t.Parallel()
	for _, parallel := range []bool{false, true} {
		st := memstore.New()
		clock := runfixture.NewClock(runfixture.Base)
		agent := runfixture.Agent("alpha", "")
		agent.ParallelActions = parallel
		turns := []scriptmodel.Turn{
			runfixture.Batch(runfixture.Echo("c1", "a"), runfixture.Echo("c2", "b"), scriptmodel.Call("c3", "fail", runfixture.EchoArgs{Text: "no"})),
			scriptmodel.Reply("?no tool call"),
			runfixture.Batch(runfixture.Echo("c4", "c"), runfixture.Echo("c5", "d")),
			scriptmodel.Reply("done"),
		}
		runfixture.Run(t, runfixture.Runner(st, clock, 0, turns...), "r", agent, "task")
		if inv := load(t, st, "r").Invocations; len(inv) != 1 {
			t.Errorf("parallel %v: %d invocations: %+v", parallel, len(inv), inv)
		}
	}
}

// TestGatesOfABatch: the actions of a batch that waited at a gate carry
// their request and answer; one denied — settled without an intent, by an
// action_result before the last of its batch — keeps its settlement, with
// the denial's note as its audit.
func TestGatesOfABatch(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	clock := runfixture.NewClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	agent := runfixture.Agent("gated", "You echo.")
	for i := range agent.Tools {
		if agent.Tools[i].Name == "echo" {
			agent.Tools[i].Approval = polyloop.ApprovalRequired
		}
	}
	ctx := context.Background()
	r := runfixture.Runner(st, clock, 0, runfixture.Batch(runfixture.Echo("c1", "first"), runfixture.Echo("c2", "second")), scriptmodel.Reply("done"))
	res := runfixture.Run(t, r, "g", agent, "go")
	if res.Suspended == nil || len(res.Suspended.Approvals) != 2 {
		t.Fatalf("not suspended on two approvals: %+v", res)
	}
	first, second := res.Suspended.Approvals[0].ActionID, res.Suspended.Approvals[1].ActionID
	if err := r.Approve(ctx, "g", first, polyloop.ApprovalDecision{Allow: false, By: "ann", Note: "not this one"}); err != nil {
		t.Fatal(err)
	}
	if err := r.Approve(ctx, "g", second, polyloop.ApprovalDecision{Allow: true, By: "ann"}); err != nil {
		t.Fatal(err)
	}
	if res, err := r.Resume(ctx, "g", agent); err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("resume: %+v, %v", res, err)
	}
	step := load(t, st, "g").Steps[0]
	gates := step.Gates
	if len(gates) != 2 {
		t.Fatalf("%d gates, want 2", len(gates))
	}
	denied, allowed := gates[0], gates[1]
	if denied.Kind != polyloop.KindApprovalRequested || denied.ActionID != first || denied.Decision == nil || denied.Decision.Allow {
		t.Errorf("denied gate %+v, decision %+v", denied, denied.Decision)
	}
	if allowed.ActionID != second || allowed.Decision == nil || !allowed.Decision.Allow {
		t.Errorf("allowed gate %+v, decision %+v", allowed, allowed.Decision)
	}
	var atGate, executed *trajectory.Action
	for _, a := range step.Actions {
		switch {
		case a.ActionID == first && a.AtGate:
			atGate = a
		case a.ActionID == second && !a.AtGate:
			executed = a
		}
	}
	if atGate == nil || atGate.Settled == nil || atGate.Settled.Outcome.Status != polyloop.NotExecuted || atGate.Settled.Audit != "not this one" || atGate.Gate != denied {
		t.Errorf("the denied action, settled at its gate: %+v", atGate)
	}
	if executed == nil || executed.Settled == nil || executed.Settled.Outcome.Status != polyloop.Executed || executed.Gate != allowed {
		t.Errorf("the allowed action, executed: %+v", executed)
	}
}
