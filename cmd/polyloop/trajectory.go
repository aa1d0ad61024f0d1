package main

import (
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/diag"
)

// trajectory is a run as show presents it: its steps, each with its model
// calls, actions and settlement, built from the log alone.
type trajectory struct {
	RunID        string                     `json:"run_id"`
	Agent        string                     `json:"agent"`
	SnapshotHash string                     `json:"snapshot_hash"`
	StartedAt    time.Time                  `json:"started_at"`
	Task         string                     `json:"task"`
	System       string                     `json:"system,omitempty"`
	Parent       *polyloop.ParentRef        `json:"parent,omitempty"`
	Records      int                        `json:"records"`
	Steps        []*stepView                `json:"steps"`
	Overrides    []*polyloop.ConfigOverride `json:"config_overrides,omitempty"`
	Finished     *polyloop.RunFinished      `json:"finished,omitempty"`
	// Totals are computed from the log (for an unfinished run too).
	Totals polyloop.Totals `json:"totals"`
	// Plan is what resume would do (unfinished runs); PlanError says why
	// the log cannot be planned (a corrupt log).
	Plan      *polyloop.ResumePlan  `json:"plan,omitempty"`
	PlanError string                `json:"plan_error,omitempty"`
	Children  []polyloop.RunSummary `json:"children,omitempty"`
}

// stepView is one step: its model calls (orphaned intents included), its
// action attempts, the child receptions, and its StepCompleted record.
type stepView struct {
	Step       int                        `json:"step"`
	ModelCalls []*callView                `json:"model_calls"`
	Actions    []*actionView              `json:"actions,omitempty"`
	Receptions []*polyloop.ChildReception `json:"receptions,omitempty"`
	Completed  *polyloop.StepCompleted    `json:"completed,omitempty"`
	// Maintenance is what the step's maintenance recorded: the children it
	// received, its operations, and whether it is done.
	Maintenance *maintenanceView `json:"maintenance,omitempty"`
}

type maintenanceView struct {
	// Records are its receptions and operations, in log order.
	Records []maintenanceRecord `json:"records,omitempty"`
	Done    bool                `json:"done"`
}

// maintenanceRecord is a reception or an operation of a step's maintenance.
type maintenanceRecord struct {
	Reception *polyloop.ChildReception `json:"reception,omitempty"`
	Operation *polyloop.MaintenanceOp  `json:"operation,omitempty"`
}

// maintenance is the step's maintenance view, made on first use.
func (s *stepView) maintenance() *maintenanceView {
	if s.Maintenance == nil {
		s.Maintenance = &maintenanceView{}
	}
	return s.Maintenance
}

type callView struct {
	CallID  string               `json:"call_id"`
	Attempt int                  `json:"attempt"`
	Reply   *polyloop.ModelReply `json:"reply,omitempty"`
	Failure *diag.Diagnostic     `json:"failure,omitempty"`
	// Unknown marks an intent without a result: a call of unknown outcome.
	Unknown bool `json:"unknown,omitempty"`
	// View is the view version the call showed.
	View *polyloop.ViewRef `json:"view,omitempty"`
}

type actionView struct {
	ActionID string                `json:"action_id"`
	Attempt  int                   `json:"attempt"`
	Action   polyloop.Action       `json:"action"`
	Replay   polyloop.ReplayPolicy `json:"replay"`
	// Unknown marks an intent without a settlement: an action of unknown
	// outcome (a crash, an executor error, or a replay that followed).
	Unknown bool `json:"unknown,omitempty"`
}

// buildTrajectory folds a log into a trajectory.
func buildTrajectory(log polyloop.RunLog) *trajectory {
	t := &trajectory{RunID: log.RunID, Records: len(log.Records), Steps: []*stepView{}, Totals: polyloop.ComputeTotals(log)}
	if s := log.Started(); s != nil {
		t.Agent, t.SnapshotHash, t.Task, t.System, t.Parent = s.Snapshot.Agent, s.SnapshotHash, s.Snapshot.Task.Input, s.Snapshot.System, s.Parent
		t.StartedAt = log.Records[0].At
	}
	step := func(n int) *stepView {
		if len(t.Steps) == 0 || t.Steps[len(t.Steps)-1].Step != n {
			t.Steps = append(t.Steps, &stepView{Step: n, ModelCalls: []*callView{}})
		}
		return t.Steps[len(t.Steps)-1]
	}
	for _, r := range log.Records {
		switch b := r.Body.(type) {
		case *polyloop.ModelCallIntent:
			s := step(b.Step)
			for _, c := range s.ModelCalls {
				c.Unknown = c.Unknown || (c.Reply == nil && c.Failure == nil)
			}
			s.ModelCalls = append(s.ModelCalls, &callView{CallID: b.CallID, Attempt: b.Attempt, Unknown: true, View: b.View})
		case *polyloop.ModelCallResult:
			for _, c := range step(b.Step).ModelCalls {
				if c.CallID == b.CallID {
					c.Reply, c.Failure, c.Unknown = b.Reply, b.Failure, false
				}
			}
		case *polyloop.ActionIntent:
			s := step(b.Step)
			s.Actions = append(s.Actions, &actionView{ActionID: b.ActionID, Attempt: b.Attempt, Action: b.Action, Replay: b.Replay, Unknown: true})
		case *polyloop.ChildReception:
			s := step(b.Step)
			if b.Maintenance {
				m := s.maintenance()
				m.Records = append(m.Records, maintenanceRecord{Reception: b})
				continue
			}
			s.Receptions = append(s.Receptions, b)
		case *polyloop.MaintenanceOp:
			m := step(b.Step).maintenance()
			m.Records = append(m.Records, maintenanceRecord{Operation: b})
		case *polyloop.MaintenanceDone:
			step(b.Step).maintenance().Done = true
		case *polyloop.StepCompleted:
			s := step(b.Step)
			s.Completed = b
			if n := len(s.Actions); n > 0 && b.Outcome != nil {
				s.Actions[n-1].Unknown = false
			}
		case *polyloop.ConfigOverride:
			t.Overrides = append(t.Overrides, b)
		case *polyloop.RunFinished:
			t.Finished = b
		}
	}
	if t.Finished == nil {
		plan, err := polyloop.PlanResume(log)
		if err != nil {
			t.PlanError = err.Error()
		} else {
			t.Plan = &plan
		}
	}
	return t
}
