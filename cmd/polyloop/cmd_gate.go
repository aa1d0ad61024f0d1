package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/polyloop/polyloop"
	"github.com/spf13/cobra"
)

// exitSuspended: the run waits at a gate (an approval, a delivery); it is
// not finished, and resume goes on once the gates are answered.
const exitSuspended = 3

type approveFlags struct {
	allow, deny bool
	note, by    string
}

func newApproveCmd(a *app) *cobra.Command {
	var f approveFlags
	c := &cobra.Command{
		Use:   "approve RUN_ID [ACTION] (--allow | --deny) [--note TEXT] [--by NAME]",
		Short: "Allow or deny an action waiting for approval; without a decision, list them",
		Long: `A tool with "approval: required" (or an approval policy that asks) makes its
actions wait: the run is suspended and lists them. approve records a decision in
the run's log; then "polyloop resume" goes on: an allowed action runs, a denied
one is not run and the model is told so with the agent's denied text. The note
is kept in the log for people and never shown to the model.

ACTION is the action id ("a3", "a3.2") or the model's tool-call id; it may be
left out when exactly one action waits. Without --allow or --deny, approve lists
the actions waiting for approval, with their arguments.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			action := ""
			if len(args) == 2 {
				action = args[1]
			}
			return a.approve(cmd.Context(), args[0], action, f)
		},
	}
	c.Flags().BoolVar(&f.allow, "allow", false, "allow the action")
	c.Flags().BoolVar(&f.deny, "deny", false, "deny the action")
	c.Flags().StringVar(&f.note, "note", "", "why (kept in the log, never shown to the model)")
	c.Flags().StringVar(&f.by, "by", defaultUser(), "who decides")
	c.MarkFlagsMutuallyExclusive("allow", "deny")
	return c
}

type deliverFlags struct {
	status, observation, file, by string
	done                          bool
}

func newDeliverCmd(a *app) *cobra.Command {
	var f deliverFlags
	c := &cobra.Command{
		Use:   "deliver RUN_ID ACTION --status STATUS [--observation TEXT | --observation-file FILE] [--done]",
		Short: "Deliver the result of a deferred tool's action",
		Long: `A deferred tool ("deferred: true") is never run by polyloop: its results come
from outside. The run waits for them, suspended; deliver records a result in the
run's log, and "polyloop resume" goes on as if an executor had returned it.

STATUS is executed (the action ran, whatever its result), not_executed (it did
not start) or env_error (the environment is broken: the run finishes env_error).
ACTION is the action id or the model's tool-call id.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.deliver(cmd.Context(), args[0], args[1], f)
		},
	}
	c.Flags().StringVar(&f.status, "status", "", "executed, not_executed or env_error (required)")
	c.Flags().StringVar(&f.observation, "observation", "", "the result's text, as the model will see it")
	c.Flags().StringVar(&f.file, "observation-file", "", "read the result's text from this file (- for standard input)")
	c.Flags().BoolVar(&f.done, "done", false, "the environment's completion signal: the run completes after this step")
	c.Flags().StringVar(&f.by, "by", defaultUser(), "who delivers")
	c.MarkFlagsMutuallyExclusive("observation", "observation-file")
	_ = c.MarkFlagRequired("status")
	return c
}

func defaultUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "cli"
}

// pendingGates reads a run's log and returns what its open step waits for.
func pendingGates(ctx context.Context, st store, id string) (*polyloop.Suspension, error) {
	log, err := readRun(ctx, st, id)
	if err != nil {
		return nil, err
	}
	if f := log.Finished(); f != nil {
		return nil, fmt.Errorf("run %s finished (%s): nothing waits for an answer", id, f.StopReason)
	}
	return polyloop.PendingGates(log)
}

func (a *app) approve(ctx context.Context, id, action string, f approveFlags) error {
	st, err := openStore(ctx, a.store, existingStore)
	if err != nil {
		return err
	}
	defer st.Close()
	pending, err := pendingGates(ctx, st, id)
	if err != nil {
		return err
	}
	if !f.allow && !f.deny {
		printGates(a.stdout, id, pending)
		return nil
	}
	if action == "" {
		switch len(pending.Approvals) {
		case 0:
			return fmt.Errorf("run %s waits for no approval: nothing to %s%s", id, decisionVerb(f), a.deliveriesHint(id, pending))
		case 1:
			action = pending.Approvals[0].ActionID
		default:
			printGates(a.stderr, id, pending)
			return fmt.Errorf("run %s: %d actions wait for approval; name one: polyloop approve %s %s --%s%s",
				id, len(pending.Approvals), id, pending.Approvals[0].ActionID, decisionVerb(f), a.storeFlag())
		}
	}
	r := &polyloop.Runner{Store: st}
	if err := r.Approve(ctx, id, action, polyloop.ApprovalDecision{Allow: f.allow, By: f.by, Note: f.note}); err != nil {
		return gateError(err)
	}
	verb := "allowed"
	if f.deny {
		verb = "denied"
	}
	fmt.Fprintf(a.stdout, "run %s: %s %s; %s\n", id, verb, action, a.afterAnswer(ctx, st, id))
	return nil
}

// decisionVerb is the flag of the decision asked for: allow or deny.
func decisionVerb(f approveFlags) string {
	if f.deny {
		return "deny"
	}
	return "allow"
}

// deliveriesHint says, after "waits for no approval", the deliveries the
// run does wait for, with the command that answers the first.
func (a *app) deliveriesHint(id string, s *polyloop.Suspension) string {
	if len(s.Deliveries) == 0 {
		return ""
	}
	return fmt.Sprintf(" (it waits for the delivery of %d actions: polyloop deliver %s %s --status executed --observation TEXT%s)",
		len(s.Deliveries), id, s.Deliveries[0].ActionID, a.storeFlag())
}

// afterAnswer says what to do once a gate is answered: answer the gates
// still waiting, with their commands, or resume the run. The resume
// command names the agent file as the run's log cannot (it holds the
// agent's name, not its file).
func (a *app) afterAnswer(ctx context.Context, st store, id string) string {
	log, err := readRun(ctx, st, id)
	if err != nil {
		return "then resume it (reading it again failed: " + err.Error() + ")"
	}
	pending, err := polyloop.PendingGates(log)
	if err == nil && len(pending.Approvals)+len(pending.Deliveries) > 0 {
		return "still waiting: " + strings.Join(a.answerCommands(id, pending), "; ")
	}
	return fmt.Sprintf("continue with the file of agent %q: %s", log.Started().Snapshot.Agent, a.resumeCommand(id, "FILE"))
}

// answerCommands are the commands that answer each waiting gate.
func (a *app) answerCommands(id string, s *polyloop.Suspension) []string {
	var cmds []string
	for _, g := range s.Approvals {
		cmds = append(cmds, fmt.Sprintf("polyloop approve %s %s --allow|--deny%s", id, g.ActionID, a.storeFlag()))
	}
	for _, g := range s.Deliveries {
		cmds = append(cmds, fmt.Sprintf("polyloop deliver %s %s --status executed --observation TEXT%s", id, g.ActionID, a.storeFlag()))
	}
	return cmds
}

func (a *app) deliver(ctx context.Context, id, action string, f deliverFlags) error {
	out := polyloop.ActionOutcome{Status: polyloop.ActionStatus(f.status), Observation: f.observation, Done: f.done}
	if !out.Status.Valid() {
		return fmt.Errorf("--status %q: expected executed, not_executed or env_error", f.status)
	}
	if f.file != "" {
		text, err := readInput(ctx, a.stdin, f.file, "the observation", polyloop.MaxObservationBytes)
		if err != nil {
			return err
		}
		out.Observation = text
	}
	st, err := openStore(ctx, a.store, existingStore)
	if err != nil {
		return err
	}
	defer st.Close()
	r := &polyloop.Runner{Store: st}
	if err := r.Deliver(ctx, id, action, out, f.by); err != nil {
		return gateError(err)
	}
	fmt.Fprintf(a.stdout, "run %s: delivered %s (%s); %s\n", id, action, out.Status, a.afterAnswer(ctx, st, id))
	return nil
}

// gateError says what a refused answer means.
func gateError(err error) error {
	switch {
	case errors.Is(err, polyloop.ErrAlreadyAnswered):
		return fmt.Errorf("%w (an answer is final: it is in the log)", err)
	case errors.Is(err, polyloop.ErrLeaseHeld):
		return fmt.Errorf("%w: a process is driving the run, its other actions still running; nothing was recorded — answer once it is suspended (its command exits 3)", err)
	case errors.Is(err, polyloop.ErrSeqConflict):
		return fmt.Errorf("%w: the run was written to meanwhile (is it being resumed?); nothing was recorded, try again", err)
	}
	return err
}

// printGates lists what a run waits for.
func printGates(w io.Writer, id string, s *polyloop.Suspension) {
	if len(s.Approvals)+len(s.Deliveries) == 0 {
		fmt.Fprintf(w, "run %s waits for no approval or delivery\n", id)
		return
	}
	for _, g := range s.Approvals {
		fmt.Fprintf(w, "run %s: %s awaits approval: %s%s\n", id, g.ActionID, describeAction(&g.Action, 500), deadline(g))
	}
	for _, g := range s.Deliveries {
		fmt.Fprintf(w, "run %s: %s awaits delivery: %s%s\n", id, g.ActionID, describeAction(&g.Action, 500), deadline(g))
	}
}

func deadline(g polyloop.PendingGate) string {
	if g.Deadline == nil {
		return ""
	}
	return " (deadline " + g.Deadline.Format("2006-01-02 15:04:05 MST") + ")"
}

// reportSuspended says what a suspended run waits for and how to go on.
func (a *app) reportSuspended(res polyloop.RunResult, agentPath string) error {
	printGates(a.stdout, res.RunID, res.Suspended)
	for _, cmd := range a.answerCommands(res.RunID, res.Suspended) {
		fmt.Fprintf(a.stdout, "answer with: %s\n", cmd)
	}
	fmt.Fprintf(a.stdout, "then: %s\n", a.resumeCommand(res.RunID, cmp.Or(agentPath, "FILE")))
	return &exitErr{code: exitSuspended}
}
