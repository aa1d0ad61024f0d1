package main

import (
	"context"
	"fmt"
	"time"

	"github.com/polyloop/polyloop"
)

// hintReadTimeout bounds the read of the log after an interruption.
const hintReadTimeout = 5 * time.Second

// resumeHint says what resume will do with a run, from the plan computed
// on its log as the store holds it now (read back, not the run's memory).
// The read is detached from ctx, which an interruption has cancelled.
func resumeHint(ctx context.Context, st polyloop.Store, id string) string {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hintReadTimeout)
	defer cancel()
	log, err := st.ReadLog(rctx, id)
	if err != nil {
		return fmt.Sprintf("its log could not be read back to say what resume will do (%v)", err)
	}
	log.RunID = id
	plan, err := polyloop.PlanResume(log)
	if err != nil {
		return fmt.Sprintf("resume will refuse it: %v", err)
	}
	return planHint(plan)
}

// planHint says a plan as what resume will do.
func planHint(p polyloop.ResumePlan) string {
	switch p.Action {
	case polyloop.PlanStartStep:
		return fmt.Sprintf("resume will start step %d", p.Step)
	case polyloop.PlanRetryModelCall:
		return fmt.Sprintf("resume will call the model again for step %d (the interrupted call's outcome is unknown; model calls are replayable)", p.Step)
	case polyloop.PlanReparse:
		return fmt.Sprintf("resume will parse step %d's stored reply again and go on", p.Step)
	case polyloop.PlanReplayAction:
		return fmt.Sprintf("resume will replay action %s (%s, %s)", p.ActionID, p.Tool, polyloop.ReplaySafe)
	case polyloop.PlanStopUnknown:
		return fmt.Sprintf("resume can only finish it %s: %s action %s (%s) was in flight, and whether it took effect is unknown",
			polyloop.StopResumeStateUnknown, polyloop.NeverReplay, p.ActionID, toolOrCode(p.Tool))
	case polyloop.PlanFinish:
		return fmt.Sprintf("resume will write the finish its log already decides (%s)", p.StopReason)
	case polyloop.PlanFinished:
		return fmt.Sprintf("the run is finished (%s)", p.StopReason)
	}
	return fmt.Sprintf("resume will follow the plan %s", p.Action)
}
