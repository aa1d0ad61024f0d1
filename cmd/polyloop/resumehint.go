package main

import (
	"fmt"
	"strings"

	"github.com/polyloop/polyloop"
)

// planHint says a plan as what resume will do.
func planHint(p polyloop.ResumePlan) string {
	switch p.Action {
	case polyloop.PlanStartStep:
		return fmt.Sprintf("resume will start step %d", p.Step)
	case polyloop.PlanRetryModelCall:
		return fmt.Sprintf("resume will call the model again for step %d (the interrupted call's outcome is unknown; model calls are replayable)", p.Step)
	case polyloop.PlanReparseReply:
		return fmt.Sprintf("resume will parse step %d's stored reply again and go on", p.Step)
	case polyloop.PlanReplayAction:
		return fmt.Sprintf("resume will replay action %s (%s, %s)", p.ActionID, p.Tool, polyloop.ReplaySafe)
	case polyloop.PlanReconcile:
		return fmt.Sprintf("resume can only finish it %s: %s action %s (%s) was in flight, and whether it took effect is unknown — unless its tool can be reconciled: then the world is asked, an outcome it reports is adopted, and an action that did not happen runs again with the same key",
			polyloop.StopResumeStateUnknown, polyloop.NeverReplay, p.ActionID, toolOrCode(p.Tool))
	case polyloop.PlanStopUnknown:
		return fmt.Sprintf("resume can only finish it %s: %s action %s (%s) was in flight, and whether it took effect is unknown",
			polyloop.StopResumeStateUnknown, polyloop.NeverReplay, p.ActionID, toolOrCode(p.Tool))
	case polyloop.PlanWriteFinish:
		return fmt.Sprintf("resume will write the finish its log already decides (%s)", p.StopReason)
	case polyloop.PlanContinueBatch:
		return fmt.Sprintf("resume will go on with step %d's actions not yet run (none is of unknown outcome)", p.Step)
	case polyloop.PlanAwaitGates:
		return fmt.Sprintf("the run waits for an answer to %s (polyloop approve / deliver); resume then goes on", strings.Join(p.Pending, ", "))
	case polyloop.PlanAlreadyFinished:
		return fmt.Sprintf("the run is finished (%s)", p.StopReason)
	}
	return fmt.Sprintf("resume will follow the plan %s", p.Action)
}
