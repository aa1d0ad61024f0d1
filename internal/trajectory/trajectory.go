// Package trajectory turns a run log into the per-step view that people
// read: `polyloop show` prints it and `polyloop view` renders it. It is
// built from the log alone (Build), plus the run's children from the
// store's listing (Load); it never decides anything about the run.
package trajectory

import (
	"cmp"
	"slices"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/diag"
)

// Trajectory is a run as people read it: its steps, each with its model
// calls, actions and settlement, its configuration overrides, how it ended
// (or what resume would do), and the invocations that wrote it.
type Trajectory struct {
	RunID        string              `json:"run_id"`
	Agent        string              `json:"agent"`
	SnapshotHash string              `json:"snapshot_hash"`
	StartedAt    time.Time           `json:"started_at"`
	Task         string              `json:"task"`
	System       string              `json:"system,omitempty"`
	Parent       *polyloop.ParentRef `json:"parent,omitempty"`
	// ForkedFrom and ReplayOf are the run's source, for a fork (its first
	// steps are copies of the source's, Step.Copied) or a replay.
	ForkedFrom *polyloop.RunSource `json:"forked_from,omitempty"`
	ReplayOf   *polyloop.RunSource `json:"replay_of,omitempty"`
	// Snapshot is the RunStarted snapshot (overrides carry their own).
	Snapshot  polyloop.Snapshot `json:"-"`
	Records   int               `json:"records"`
	Steps     []*Step           `json:"steps"`
	Overrides []*Override       `json:"config_overrides,omitempty"`
	// Awaiting lists the gates an unfinished run waits at (approvals,
	// deliveries), with the actions' arguments.
	Awaiting *polyloop.Suspension `json:"awaiting,omitempty"`
	// Takeovers are the lease take-overs the log records.
	Takeovers []*Takeover           `json:"lease_takeovers,omitempty"`
	Finished  *polyloop.RunFinished `json:"finished,omitempty"`
	// UpdatedAt is the time of the last record.
	UpdatedAt time.Time `json:"updated_at"`
	// Totals are computed from the log (for an unfinished run too).
	Totals polyloop.Totals `json:"totals"`
	// Running is the process that drives the run now, the live holder of
	// its lease (Probe); nil when none does or the store cannot tell.
	Running *polyloop.LeaseOwner `json:"running,omitempty"`
	// Plan is what resume would do (unfinished runs no live process
	// drives); PlanError says why the log cannot be planned (a corrupt
	// log).
	Plan      *polyloop.ResumePlan  `json:"plan,omitempty"`
	PlanError string                `json:"plan_error,omitempty"`
	Children  []polyloop.RunSummary `json:"children,omitempty"`
	// Invocations are the processes (or calls of Run and Resume) that
	// wrote the log, inferred from it (see Invocations).
	Invocations []Invocation `json:"invocations,omitempty"`
}

// Override is a config_override record and where it stands in the log,
// with the fields that differ from the snapshot in force before it.
type Override struct {
	*polyloop.ConfigOverride
	Seq int64     `json:"seq"`
	At  time.Time `json:"at"`
	// Diff lists the differing paths (polyloop.DiffSnapshots) between the
	// snapshot in force before the override and the override's.
	Diff []string `json:"diff,omitempty"`
}

// Step is one step: its model calls (orphaned intents included), its action
// intents (replays included; in the reply's order, each action's attempts
// in log order), the gates its actions waited at, the child receptions, and
// its step record.
type Step struct {
	Step       int                     `json:"step"`
	ModelCalls []*Call                 `json:"model_calls"`
	Actions    []*Action               `json:"actions,omitempty"`
	Gates      []*Gate                 `json:"gates,omitempty"`
	Receptions []*Reception            `json:"receptions,omitempty"`
	Completed  *polyloop.StepCompleted `json:"completed,omitempty"`
	// Maintenance is what the step's maintenance recorded: the children it
	// received, its operations, and whether it is done.
	Maintenance *Maintenance `json:"maintenance,omitempty"`
	// Copied marks a step of a fork copied from its source: its calls and
	// actions count in the source's totals, not this run's.
	Copied bool `json:"copied,omitempty"`
	// FirstSeq and LastSeq bound the step's records.
	FirstSeq int64 `json:"first_seq"`
	LastSeq  int64 `json:"last_seq"`
}

// Reply is the reply of the step's answered model call, or nil.
func (s *Step) Reply() *polyloop.ModelReply {
	for i := len(s.ModelCalls) - 1; i >= 0; i-- {
		if r := s.ModelCalls[i].Reply; r != nil {
			return r
		}
	}
	return nil
}

// Maintenance is a step's maintenance: its receptions and operations, in log
// order.
type Maintenance struct {
	Records []MaintenanceRecord `json:"records,omitempty"`
	Done    bool                `json:"done"`
}

// MaintenanceRecord is a reception or an operation of a step's maintenance.
type MaintenanceRecord struct {
	Reception *polyloop.ChildReception `json:"reception,omitempty"`
	Operation *polyloop.MaintenanceOp  `json:"operation,omitempty"`
}

// maintenance is the step's maintenance, made on first use.
func (s *Step) maintenance() *Maintenance {
	if s.Maintenance == nil {
		s.Maintenance = &Maintenance{}
	}
	return s.Maintenance
}

// Call is one model-call intent and its result, if any.
type Call struct {
	CallID  string               `json:"call_id"`
	Attempt int                  `json:"attempt"`
	Seq     int64                `json:"seq"`
	At      time.Time            `json:"at"`
	Reply   *polyloop.ModelReply `json:"reply,omitempty"`
	Failure *diag.Diagnostic     `json:"failure,omitempty"`
	// Usage is what a failed call is known to have consumed.
	Usage *polyloop.Usage `json:"usage,omitempty"`
	// Unknown marks an intent without a result: a call of unknown outcome.
	Unknown bool `json:"unknown,omitempty"`
	// InFlight marks an intent without a result yet in a run a live
	// process drives (MarkRunning): the call is under way.
	InFlight bool `json:"in_flight,omitempty"`
	// View is the view version the call showed.
	View *polyloop.ViewRef `json:"view,omitempty"`
}

// Action is one action intent — an attempt of one action of the step's
// batch — and its settlement, if that attempt was settled. An action
// settled at its gate (denied, or delivered from outside) has no intent:
// Attempt and Seq are 0 and Gate says how it was settled.
type Action struct {
	ActionID string                `json:"action_id"`
	Attempt  int                   `json:"attempt"`
	Index    int                   `json:"index"`
	Of       int                   `json:"of"`
	Seq      int64                 `json:"seq"`
	At       time.Time             `json:"at"`
	Action   polyloop.Action       `json:"action"`
	Replay   polyloop.ReplayPolicy `json:"replay"`
	// Settled is the action's settled outcome (from an action_result or
	// the step record); nil while unknown.
	Settled *polyloop.SettledAction `json:"settled,omitempty"`
	// SettledSeq is the seq of the record that settled it.
	SettledSeq int64 `json:"settled_seq,omitempty"`
	// Unknown marks an intent without a settlement: an action of unknown
	// outcome (a crash, an executor error, or a replay that followed).
	Unknown bool `json:"unknown,omitempty"`
	// InFlight marks an intent without a settlement yet in a run a live
	// process drives (MarkRunning): the action is under way.
	InFlight bool `json:"in_flight,omitempty"`
	// Replayed marks an attempt that a later attempt of the same action
	// replaced.
	Replayed bool `json:"replayed,omitempty"`
	// Gate is the gate the action waited at, if any; AtGate marks an
	// action settled there without an intent (denied, or delivered).
	Gate   *Gate `json:"-"`
	AtGate bool  `json:"at_gate,omitempty"`
}

// Reception is a child_reception record and its seq.
type Reception struct {
	*polyloop.ChildReception
	Seq int64 `json:"seq"`
}

// Build folds a log into a trajectory. A corrupt log gives the trajectory
// of what it holds, with PlanError saying what is wrong (unfinished runs).
func Build(log polyloop.RunLog) *Trajectory {
	t := &Trajectory{RunID: log.RunID, Records: len(log.Records), Steps: []*Step{}, Totals: polyloop.ComputeTotals(log)}
	b := builder{t: t}
	for _, r := range log.Records {
		b.add(r)
	}
	for _, s := range t.Steps { // the reply's order: actions settled at their gate come in last
		slices.SortStableFunc(s.Actions, func(x, y *Action) int { return cmp.Compare(x.Index, y.Index) })
	}
	if n := len(log.Records); n > 0 {
		t.UpdatedAt = log.Records[n-1].At
	}
	if t.Finished == nil && len(log.Records) > 0 {
		plan, err := polyloop.PlanResume(log)
		if err != nil {
			t.PlanError = err.Error()
		} else {
			t.Plan = &plan
		}
		if s, err := polyloop.PendingGates(log); err == nil && len(s.Approvals)+len(s.Deliveries) > 0 {
			t.Awaiting = s
		}
	}
	t.Invocations = Invocations(log)
	return t
}

type builder struct {
	t    *Trajectory
	snap polyloop.Snapshot
	// copiedUntil is, in a fork, the seq of the last record copied from
	// its source.
	copiedUntil int64
}

func (b *builder) step(n int, seq int64) *Step {
	t := b.t
	if len(t.Steps) == 0 || t.Steps[len(t.Steps)-1].Step != n {
		t.Steps = append(t.Steps, &Step{Step: n, ModelCalls: []*Call{}, FirstSeq: seq, Copied: seq <= b.copiedUntil})
	}
	s := t.Steps[len(t.Steps)-1]
	s.LastSeq = seq
	return s
}

func (b *builder) add(r polyloop.Record) {
	t := b.t
	switch body := r.Body.(type) {
	case *polyloop.RunStarted:
		t.Agent, t.SnapshotHash, t.Task, t.System, t.Parent = body.Snapshot.Agent, body.SnapshotHash, body.Snapshot.Task.Input, body.Snapshot.System, body.Parent
		t.StartedAt, t.Snapshot, b.snap = r.At, body.Snapshot, body.Snapshot
		t.ForkedFrom, t.ReplayOf = body.ForkedFrom, body.ReplayOf
		if f := body.ForkedFrom; f != nil {
			b.copiedUntil = int64(f.Copied)
		}
		if t.RunID == "" {
			t.RunID = body.RunID
		}
	case *polyloop.ModelCallIntent:
		s := b.step(body.Step, r.Seq)
		s.ModelCalls = append(s.ModelCalls, &Call{CallID: body.CallID, Attempt: body.Attempt, Seq: r.Seq, At: r.At, Unknown: true, View: body.View})
	case *polyloop.ModelCallResult:
		for _, c := range b.step(body.Step, r.Seq).ModelCalls {
			if c.CallID == body.CallID {
				c.Reply, c.Failure, c.Usage, c.Unknown = body.Reply, body.Failure, body.Usage, false
			}
		}
	case *polyloop.ActionIntent:
		s := b.step(body.Step, r.Seq)
		for _, a := range s.Actions {
			if a.ActionID == body.ActionID && a.Settled == nil {
				a.Replayed = true
			}
		}
		s.Actions = append(s.Actions, &Action{ActionID: body.ActionID, Attempt: body.Attempt, Index: body.Index, Of: body.BatchSize(),
			Seq: r.Seq, At: r.At, Action: body.Action, Replay: body.Replay, Unknown: true, Gate: s.gate(body.ActionID)})
	case *polyloop.ChildReception:
		s := b.step(body.Step, r.Seq)
		if body.Maintenance {
			m := s.maintenance()
			m.Records = append(m.Records, MaintenanceRecord{Reception: body})
			return
		}
		s.Receptions = append(s.Receptions, &Reception{ChildReception: body, Seq: r.Seq})
	case *polyloop.MaintenanceOp:
		m := b.step(body.Step, r.Seq).maintenance()
		m.Records = append(m.Records, MaintenanceRecord{Operation: body})
	case *polyloop.MaintenanceDone:
		b.step(body.Step, r.Seq).maintenance().Done = true
	case *polyloop.ActionResult:
		settle(b.step(body.Step, r.Seq), &body.SettledAction, r.Seq)
	case *polyloop.StepCompleted:
		s := b.step(body.Step, r.Seq)
		s.Completed = body
		if body.Outcome != nil {
			settle(s, &body.SettledAction, r.Seq)
		}
	case *polyloop.ConfigOverride:
		t.Overrides = append(t.Overrides, &Override{ConfigOverride: body, Seq: r.Seq, At: r.At, Diff: polyloop.DiffSnapshots(b.snap, body.Snapshot)})
		b.snap = body.Snapshot
	case *polyloop.LeaseTakeover:
		t.Takeovers = append(t.Takeovers, &Takeover{LeaseTakeover: body, Seq: r.Seq, At: r.At})
	case *polyloop.ApprovalRequested:
		s := b.step(body.Step, r.Seq)
		s.Gates = append(s.Gates, &Gate{Kind: polyloop.KindApprovalRequested, GateRequest: &body.GateRequest, Seq: r.Seq, At: r.At})
	case *polyloop.DeliveryRequested:
		s := b.step(body.Step, r.Seq)
		s.Gates = append(s.Gates, &Gate{Kind: polyloop.KindDeliveryRequested, GateRequest: &body.GateRequest, Seq: r.Seq, At: r.At})
	case *polyloop.ApprovalDecided:
		if g := b.step(body.Step, r.Seq).gate(body.ActionID); g != nil {
			g.Decision, g.AnswerSeq, g.AnsweredAt = body, r.Seq, r.At
		}
	case *polyloop.DeliveryReceived:
		if g := b.step(body.Step, r.Seq).gate(body.ActionID); g != nil {
			g.Delivery, g.AnswerSeq, g.AnsweredAt = body, r.Seq, r.At
		}
	case *polyloop.RunFinished:
		t.Finished = body
	}
}

// settle attaches a settlement to the intent it settles: the one with its
// action id and attempt (the latest with that id in a 1.0 log, which has
// no attempts on outcomes). An action settled at its gate, which has no
// intent, is added from its gate's request.
func settle(s *Step, sa *polyloop.SettledAction, seq int64) {
	for i := len(s.Actions) - 1; i >= 0; i-- {
		a := s.Actions[i]
		if a.ActionID == sa.ResultID && (sa.Attempt == 0 || sa.Attempt == a.Attempt) {
			a.Settled, a.SettledSeq, a.Unknown, a.Replayed = sa, seq, false, false
			return
		}
	}
	if g := s.gate(sa.ResultID); g != nil {
		s.Actions = append(s.Actions, &Action{ActionID: g.ActionID, Index: g.Index, Of: max(g.Of, 1), At: g.At, Action: g.Action,
			Settled: sa, SettledSeq: seq, Gate: g, AtGate: true})
	}
}
