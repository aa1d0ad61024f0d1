package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/polyloop/polyloop"
)

// interrupted reports how a Run or Resume that returned err was
// interrupted by a signal, what resume will do, and the command that
// continues the run (cont): nil when it was not interrupted.
func (a *app) interrupted(st polyloop.Store, id, cont string, err error, in *interruption) error {
	stopAsked, canceled := in.state()
	switch {
	case errors.Is(err, polyloop.ErrStopRequested):
		fmt.Fprintf(a.stderr, "stopped: run %s stopped at a step boundary, as asked: the action in progress finished and is recorded, nothing is of unknown outcome.\n", id)
	case canceled && errors.Is(err, context.Canceled):
		how := "cancelled at once by the second signal"
		if !stopAsked {
			how = "cancelled before it started running"
		}
		fmt.Fprintf(a.stderr, "cancelled: run %s was %s; what was under way has no recorded outcome.\n", id, how)
	default:
		return nil
	}
	will, action := a.resumeWill(st, id)
	how := "is unfinished and resumable"
	switch action {
	case polyloop.PlanStopUnknown:
		how = "is unfinished; resume records that (it runs nothing more)"
	case polyloop.PlanReconcile:
		how = "is unfinished; resume asks the tool's reconciler, if it has one, and otherwise records that (it runs nothing more)"
	}
	fmt.Fprintf(a.stderr, "%s\nrun %s %s:\n  %s\n", will, id, how, cont)
	return &exitErr{code: exitInterrupted}
}

// resumeCommand is the command that resumes run id under the agent file.
func (a *app) resumeCommand(id, agentPath string) string {
	return fmt.Sprintf("polyloop resume %s --agent %s%s", id, agentPath, a.storeFlag())
}

// resumeWill says what resuming the run would do, from its log, and the
// plan's action ("" when there is no plan).
func (a *app) resumeWill(st polyloop.Store, id string) (string, polyloop.PlanAction) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	log, err := polyloop.ReadLog(ctx, st, id)
	if err != nil {
		return fmt.Sprintf("resume will decide from the log (reading it now failed: %v)", err), ""
	}
	if log.Empty() {
		return "nothing was recorded: the run does not exist yet, and polyloop run can start it again", ""
	}
	log.RunID = id
	plan, err := polyloop.PlanResume(log)
	if err != nil {
		return fmt.Sprintf("resume will refuse: %v", err), ""
	}
	return planHint(plan), plan.Action
}

// leaseRefused explains a refusal for a run held by another process, or
// returns nil when err is none.
func (a *app) leaseRefused(id, agentPath string, err error) error {
	var held *polyloop.LeaseHeldError
	switch {
	case errors.As(err, &held):
		what := "run " + id
		if held.RunID != id {
			what = fmt.Sprintf("run %s (its child run %s)", id, held.RunID)
		}
		return fmt.Errorf("%s is held by another live process: %s.\nWait for it to end; if it is stuck or gone, take the run over (recorded in the log):\n  polyloop resume %s --agent %s%s --take-over",
			what, held.Holder, id, agentPath, a.storeFlag())
	case errors.Is(err, polyloop.ErrLeaseLost):
		return fmt.Errorf("run %s: another process took its lease over, so this one stopped before its next effect (%w); polyloop show %s%s shows where the run stands", id, err, id, a.storeFlag())
	}
	return nil
}

// runningText says that a live process drives a run: "running (pid 12 on
// host, since 2026-12-07 15:04:05Z)".
func runningText(o polyloop.LeaseOwner) string {
	return fmt.Sprintf("running (pid %d on %s, since %s)", o.PID, o.Host, o.Since.Format("2006-01-02 15:04:05Z07:00"))
}
