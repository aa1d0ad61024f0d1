package trajectory

import (
	"fmt"
	"time"

	"github.com/polyloop/polyloop"
)

// Invocation is a stretch of the log written by one invocation of Run or
// Resume (one process, as a rule), or by one answer to a gate
// (Runner.Approve or Runner.Deliver): records FirstSeq to LastSeq.
type Invocation struct {
	FirstSeq int64     `json:"first_seq"`
	LastSeq  int64     `json:"last_seq"`
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	// FirstStep and LastStep are the steps its records belong to (0 for
	// records outside a step: run_started, config_override, run_finished
	// between steps).
	FirstStep int `json:"first_step"`
	LastStep  int `json:"last_step"`
	// Evidence says how the start of the invocation was recognized: "run
	// started" for the first; for a resume, the record that no
	// uninterrupted invocation writes first (see Invocations).
	Evidence string `json:"evidence"`
	// Gap is the time between the previous invocation's last record and
	// this one's first (0 for the first invocation).
	Gap time.Duration `json:"gap,omitempty"`
}

// Invocations infers which invocation wrote which records, from the log
// alone.
//
// The library stamps every record of one Append with the same time, so the
// log splits into writes: maximal runs of consecutive records with equal
// timestamps. An uninterrupted invocation starts its writes in only a few
// ways: run_started (the first write of the run); a model_call_result
// right after the write that held its intent (the call returned); an
// action_result, step_completed or child_reception right after a write
// that left an action in flight (an action ended or received a child); a
// maintenance_op, a maintenance's child_reception or maintenance_done
// right after the step's record or another record of its maintenance (the
// step's maintenance goes on). Every other record is written together with
// the record before it (writeStarts classifies every kind). So a write
// that starts with anything else was begun by a new invocation — a resume
// — and its first record says how: a retried model call (attempt > 1), a
// replayed action (attempt > 1), a config_override, a step started after a
// log that ended between steps, a reply parsed again, a lease take-over,
// or a finish the log already determined. A gate's answer
// (approval_decided, delivery_received) is a write of its own, by
// Runner.Approve or Deliver, unless it is a timeout (a resume applied it);
// what follows an answer is a resume. Time gaps alone are not taken as
// evidence (a model call or an action may take hours); they are reported
// in Gap.
//
// Some resumes leave no such evidence and go unseen, merged into the
// invocation before them:
//   - a resume inside a step's maintenance (PlanMaintain) whose first write
//     is the maintenance's next operation or reception, as the interrupted
//     invocation would have written it — unless it took a dead holder's
//     lease over (a lease_takeover: a killed process on a store with
//     leases) or changed the configuration. A resume after the process
//     stopped with an error inside the maintenance (a *PersistenceError
//     of the memory, say) is such a resume;
//   - records with identical timestamps that were written apart (a
//     hand-made log, a clock that does not move) merge into one write.
func Invocations(log polyloop.RunLog) []Invocation {
	var out []Invocation
	recs := log.Records
	step := 0
	for i := 0; i < len(recs); {
		j := i + 1
		for j < len(recs) && recs[j].At.Equal(recs[i].At) {
			j++
		}
		first := recs[i]
		var prev polyloop.RecordBody
		if i > 0 {
			prev = recs[i-1].Body
		}
		if i == 0 || !continues(prev, first.Body) {
			inv := Invocation{FirstSeq: first.Seq, From: first.At, Evidence: evidence(prev, first.Body), FirstStep: stepOf(first.Body, step)}
			if n := len(out); n > 0 {
				inv.Gap = first.At.Sub(out[n-1].To)
			}
			out = append(out, inv)
		}
		for _, r := range recs[i:j] {
			step = stepOf(r.Body, step)
		}
		cur := &out[len(out)-1]
		cur.LastSeq, cur.To, cur.LastStep = recs[j-1].Seq, recs[j-1].At, step
		i = j
	}
	return out
}

// stepOf is the step a record belongs to, or cur for records outside
// steps.
func stepOf(b polyloop.RecordBody, cur int) int {
	switch b := b.(type) {
	case *polyloop.ModelCallIntent:
		return b.Step
	case *polyloop.ModelCallResult:
		return b.Step
	case *polyloop.ActionIntent:
		return b.Step
	case *polyloop.ActionResult:
		return b.Step
	case *polyloop.ChildReception:
		return b.Step
	case *polyloop.StepCompleted:
		return b.Step
	case *polyloop.MaintenanceOp:
		return b.Step
	case *polyloop.MaintenanceDone:
		return b.Step
	}
	return cur
}

// continues reports whether an uninterrupted invocation may begin a write
// with next after a write that ended with prev.
func continues(prev, next polyloop.RecordBody) bool {
	after, ok := writeStarts[next.Kind()]
	return ok && after != nil && after(prev, next)
}

// writeStarts classifies every record kind: after which records an
// uninterrupted invocation may begin a write with a record of that kind,
// or nil when it never does (the record is written with the one before it,
// or only a new invocation writes it first). A kind missing here is taken
// for a resume; a test checks that every kind of the log format is here.
var writeStarts = map[polyloop.RecordKind]func(prev, next polyloop.RecordBody) bool{
	// The run's first write, and never after it.
	polyloop.KindRunStarted: nil,
	// With run_started, or with the records that end the previous step
	// (step_completed, maintenance_done); first only in a resume.
	polyloop.KindModelCallIntent: nil,
	polyloop.KindModelCallResult: func(prev, _ polyloop.RecordBody) bool {
		_, ok := prev.(*polyloop.ModelCallIntent)
		return ok
	},
	// With the reply that decided it, or with the settlement of the
	// batch's previous action; first only in a resume.
	polyloop.KindActionIntent:   nil,
	polyloop.KindActionResult:   func(prev, _ polyloop.RecordBody) bool { return actionInFlight(prev) },
	polyloop.KindStepCompleted:  func(prev, _ polyloop.RecordBody) bool { return actionInFlight(prev) },
	polyloop.KindChildReception: childReceived,
	// A step's maintenance writes each operation's outcome and each
	// reception as it comes, and maintenance_done when its Maintainer
	// returns (with the next step's intent or the run's finish).
	polyloop.KindMaintenanceOp:   func(prev, _ polyloop.RecordBody) bool { return inMaintenance(prev) },
	polyloop.KindMaintenanceDone: func(prev, _ polyloop.RecordBody) bool { return inMaintenance(prev) },
	// With the step record or maintenance_done that ends the run; first
	// only in a resume (a finish the log already determined).
	polyloop.KindRunFinished: nil,
	// Only a resume writes them first.
	polyloop.KindConfigOverride: nil,
	polyloop.KindLeaseTakeover:  nil,
	// With the reply whose batch waits at the gate.
	polyloop.KindApprovalRequested: nil,
	polyloop.KindDeliveryRequested: nil,
	// Written apart from any run (Runner.Approve, Runner.Deliver), or by a
	// resume after the deadline (see answerEvidence).
	polyloop.KindApprovalDecided:  nil,
	polyloop.KindDeliveryReceived: nil,
}

// actionInFlight reports whether prev, the last record of a write, leaves
// an action of the step in flight: its intent, the settlement of another
// action of the batch, or the reception of a child an action started.
func actionInFlight(prev polyloop.RecordBody) bool {
	switch b := prev.(type) {
	case *polyloop.ActionIntent, *polyloop.ActionResult:
		return true
	case *polyloop.ChildReception:
		return !b.Maintenance
	}
	return false
}

// inMaintenance reports whether prev, the last record of a write, leaves a
// step's maintenance under way: the step's record, an operation's outcome
// or a reception of the maintenance.
func inMaintenance(prev polyloop.RecordBody) bool {
	switch b := prev.(type) {
	case *polyloop.StepCompleted, *polyloop.MaintenanceOp:
		return true
	case *polyloop.ChildReception:
		return b.Maintenance
	}
	return false
}

// childReceived: an action receives its child while the action is in
// flight; a step's maintenance receives its children while it is under way.
func childReceived(prev, next polyloop.RecordBody) bool {
	if next.(*polyloop.ChildReception).Maintenance {
		return inMaintenance(prev)
	}
	return actionInFlight(prev)
}

// evidence says in words why a write begins an invocation.
func evidence(prev, next polyloop.RecordBody) string {
	if s := answerEvidence(prev, next); s != "" {
		return s
	}
	switch b := next.(type) {
	case *polyloop.RunStarted:
		return "run started"
	case *polyloop.ModelCallIntent:
		if b.Attempt > 1 {
			return fmt.Sprintf("resume: model call %s retried (attempt %d; the earlier intent had no result)", b.CallID, b.Attempt)
		}
		return fmt.Sprintf("resume: step %d started after a log that ended between steps", b.Step)
	case *polyloop.ActionIntent:
		if b.Attempt > 1 {
			return fmt.Sprintf("resume: action %s replayed (attempt %d; its outcome was unknown)", b.ActionID, b.Attempt)
		}
		return fmt.Sprintf("resume: the stored reply of step %d parsed again, action %s started", b.Step, b.ActionID)
	case *polyloop.ConfigOverride:
		return fmt.Sprintf("resume with a changed configuration (config_override: %d fields)", len(b.Fields))
	case *polyloop.LeaseTakeover:
		return fmt.Sprintf("resume on %s (pid %d), taking the run over from %s (pid %d): %s",
			b.To.Host, b.To.PID, b.From.Host, b.From.PID, b.Reason)
	case *polyloop.RunFinished:
		return fmt.Sprintf("resume: wrote the finish the log already determined (%s)", b.StopReason)
	case *polyloop.StepCompleted:
		return fmt.Sprintf("resume: step %d settled from its stored reply", b.Step)
	}
	return fmt.Sprintf("resume: a write starting with %s after %s", next.Kind(), kindOf(prev))
}

// answerEvidence says how a write that answers a gate, or that follows an
// answer, begins an invocation: an answer is written apart from any run
// (Runner.Approve, Runner.Deliver: polyloop approve, deliver), except a
// timeout, which a resume after the deadline applies; what follows an
// answer is a resume. "" for the other writes.
func answerEvidence(prev, next polyloop.RecordBody) string {
	switch b := next.(type) {
	case *polyloop.ApprovalDecided:
		if b.Timeout {
			return fmt.Sprintf("resume after the deadline: the approval of %s timed out (denied)", b.ActionID)
		}
		verb := "denied"
		if b.Allow {
			verb = "allowed"
		}
		return fmt.Sprintf("approve: %s %s by %s (an answer given apart from any run)", b.ActionID, verb, who(b.By))
	case *polyloop.DeliveryReceived:
		if b.Timeout {
			return fmt.Sprintf("resume after the deadline: the delivery of %s timed out (env_error)", b.ActionID)
		}
		return fmt.Sprintf("deliver: %s delivered by %s, %s (an answer given apart from any run)", b.ActionID, who(b.By), b.Outcome.Status)
	}
	switch prev.(type) {
	case *polyloop.ApprovalDecided, *polyloop.DeliveryReceived:
		switch b := next.(type) {
		case *polyloop.ActionIntent:
			return fmt.Sprintf("resume after the gates' answers: step %d goes on, action %s started", b.Step, b.ActionID)
		case *polyloop.ActionResult:
			return fmt.Sprintf("resume after the gates' answers: step %d goes on, action %s settled at its gate", b.Step, b.ResultID)
		case *polyloop.StepCompleted:
			return fmt.Sprintf("resume after the gates' answers: step %d settled", b.Step)
		}
	}
	return ""
}

func who(by string) string {
	if by == "" {
		return "someone unnamed"
	}
	return by
}

func kindOf(b polyloop.RecordBody) polyloop.RecordKind {
	if b == nil {
		return ""
	}
	return b.Kind()
}
