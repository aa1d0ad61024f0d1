package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/polyloop/polyloop"
)

// planRow says which row of the resume table a plan applied, and why: for
// each execution, is its intent in the log, and is its result?
func planRow(p polyloop.ResumePlan) string {
	switch p.Action {
	case polyloop.PlanStartStep:
		return fmt.Sprintf("intent no, result no → not started: run step %d", p.Step)
	case polyloop.PlanRetryModelCall:
		return fmt.Sprintf("model call %s: intent yes, result no → unknown; model calls are replayable: call again (attempt %d), the orphan intent stays in the log", p.ModelCallID, p.Attempt)
	case polyloop.PlanReparseReply:
		return fmt.Sprintf("model call %s: intent yes, result yes → done, skip; its action has no intent → parse the stored reply again and go on", p.ModelCallID)
	case polyloop.PlanReplayAction:
		if len(p.Rerun) > 0 {
			return fmt.Sprintf("action %s (%s): intent yes, result no → unknown; its reconciler answered not_happened → run it again with the same key (attempt %d)", p.ActionID, p.Tool, p.Attempt)
		}
		if p.Idempotent {
			return fmt.Sprintf("action %s (%s): intent yes, result no → unknown; its policy is idempotent → run it again with the same idempotency key (attempt %d)", p.ActionID, p.Tool, p.Attempt)
		}
		return fmt.Sprintf("action %s (%s): intent yes, result no → unknown; its policy is replay_safe → run it again (attempt %d)", p.ActionID, p.Tool, p.Attempt)
	case polyloop.PlanReconcile:
		return fmt.Sprintf("action %s (%s): intent yes, result no → unknown; its policy is never_replay → ask the executor's reconciler about %s: completed → adopt the outcome, not_happened → run again with the same key, unknown (or no reconciler) → finish %s",
			p.ActionID, toolOrCode(p.Tool), strings.Join(p.Reconcile, ", "), polyloop.StopResumeStateUnknown)
	case polyloop.PlanRestoreAndReplay:
		return fmt.Sprintf("action %s (%s): intent yes, result no → unknown; its policy is restore_and_replay (it acts only inside the run's environment, which has no network) → restore the environment to the snapshot its intent names, %s, and run it again (attempt %d)",
			p.ActionID, toolOrCode(p.Tool), p.EnvSnapshot, p.Attempt)
	case polyloop.PlanStopUnknown:
		return fmt.Sprintf("action %s (%s): intent yes, result no → unknown; its policy is never_replay → finish %s", p.ActionID, toolOrCode(p.Tool), polyloop.StopResumeStateUnknown)
	case polyloop.PlanWriteFinish:
		return fmt.Sprintf("every execution is done and step %d decided the run → write the missing run_finished (%s)", p.Step, p.StopReason)
	case polyloop.PlanAlreadyFinished:
		return fmt.Sprintf("the run is finished (%s) → nothing runs", p.StopReason)
	case polyloop.PlanContinueBatch:
		return fmt.Sprintf("step %d's batch: no action of unknown outcome, some not started → parse the stored reply again and run them", p.Step)
	case polyloop.PlanAwaitGates:
		return fmt.Sprintf("step %d's batch: %s wait at a gate, unanswered → apply any deadline that has passed, run what can run, suspend again while a gate waits (polyloop approve / deliver)",
			p.Step, strings.Join(p.Pending, ", "))
	case polyloop.PlanMaintain:
		return fmt.Sprintf("step %d's maintenance is not done → run it again, reusing the children and operations its records hold", p.Step)
	}
	return string(p.Action)
}

func toolOrCode(tool string) string {
	if tool == "" {
		return "a code action"
	}
	return tool
}

// printPlan prints a resume plan in words.
func printPlan(w io.Writer, p polyloop.ResumePlan) {
	fmt.Fprintf(w, "resume plan: %s (log read up to record %d)\n", p.Action, p.LastSeq)
	fmt.Fprintf(w, "  row:    %s\n", planRow(p))
	fmt.Fprintf(w, "  reason: %s\n", p.Reason)
	if p.EnvSnapshot != "" && p.Action != polyloop.PlanRestoreAndReplay {
		fmt.Fprintf(w, "  environment: restored from its last durable snapshot, %s\n", p.EnvSnapshot)
	}
}

// printReconciled prints the reconciliations a resume wrote (the log's
// action_reconciled records after the plan's last seq): what was asked,
// what the world said, what the run did.
func printReconciled(w io.Writer, log polyloop.RunLog, after int64) {
	for _, r := range log.Records {
		rc, ok := r.Body.(*polyloop.ActionReconciled)
		if !ok || r.Seq <= after {
			continue
		}
		said := ""
		if rc.Said != "" {
			said = fmt.Sprintf(" (%q)", rc.Said)
		}
		status := ""
		if rc.Status != "" {
			status = ", " + string(rc.Status)
		}
		fmt.Fprintf(w, "  reconciled: action %s attempt %d, key %s: the world said %s%s → %s%s\n",
			rc.ActionID, rc.Attempt, rc.Key, rc.Verdict, said, rc.Resolution, status)
	}
}
