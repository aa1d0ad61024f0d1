package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/polyloop/polyloop"
	"github.com/spf13/cobra"
)

type resumeFlags struct {
	sinkFlags
	agent       string
	allowChange bool
	takeOver    bool
	json        bool
}

func newResumeCmd(a *app) *cobra.Command {
	var f resumeFlags
	c := &cobra.Command{
		Use:   "resume RUN_ID [--agent AGENT.yaml]",
		Short: "Continue a run from its log, as the resume plan decides",
		Long: `Continue an unfinished run from its log. The plan is computed from the log
alone (polyloop.PlanResume) and printed: which execution is done, which is of
unknown outcome, and what resume does about it (a model call is made again; an
action is run again only if its tool is replay_safe, otherwise the run finishes
with resume_state_unknown).

--agent is required for an unfinished run: the stored snapshot records what the
model saw and which executor ran, not how to rebuild the executor (its working
directory, its servers). A finished run needs no agent: its result is printed.

The agent must be the one the run started with: a changed configuration is
refused with the differing fields, unless --allow-config-change, which records
the override in the log.

A run is driven by one live process at a time: resuming a run that another
process holds (its lease: pid, host, since when) is refused with exit code 2.
A holder that died is taken over at once on SQLite, and within 15 s on
PostgreSQL; --take-over takes the run from a holder that looks alive (stuck,
or on a machine that vanished), and the log records who took over from whom.
Ctrl-C works as for run: the first stops at the next step boundary, the
second cancels at once.

--view ADDR serves polyloop view from this process while it runs, with the
model's text as it streams (see polyloop run --help).

Tracing: with OTEL_EXPORTER_OTLP_ENDPOINT set (e.g. http://localhost:4318), the
resumed invocation's spans join the run's trace (see polyloop run --help).

` + exitCodesHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.resume(cmd.Context(), args[0], f)
		},
	}
	c.Flags().StringVar(&f.agent, "agent", "", "the agent file the run was started with")
	c.Flags().BoolVar(&f.allowChange, "allow-config-change", false, "resume even if the agent's snapshot differs (recorded in the log)")
	c.Flags().BoolVar(&f.takeOver, "take-over", false, "take the run over from the live process that holds it (recorded in the log)")
	c.Flags().BoolVar(&f.json, "json", false, "print the result as JSON on standard output")
	c.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "no progress lines and no resume plan")
	c.Flags().StringVar(&f.events, "events", "", "append the run's events to this file as JSON lines")
	c.Flags().StringVar(&f.view, "view", "", viewFlagHelp)
	return c
}

func (a *app) resume(parent context.Context, id string, f resumeFlags) error {
	in := newInterruption(parent, a.stderr)
	defer in.close()
	ctx := in.ctx
	st, err := a.openRead(ctx, existingStore)
	if err != nil {
		return err
	}
	defer st.Close()
	log, err := readRun(ctx, st, id)
	if err != nil {
		return err
	}
	plan, err := polyloop.PlanResume(log)
	if err != nil {
		return err
	}
	if plan.Action == polyloop.PlanAlreadyFinished {
		if !f.quiet {
			printPlan(a.stderr, plan)
		}
		fin := log.Finished()
		return a.report(polyloop.RunResult{RunID: id, StopReason: fin.StopReason, FinalAnswer: fin.FinalAnswer,
			Totals: fin.Totals, Plan: &plan, Records: log.NextSeq()}, f.agent, f.json)
	}
	if f.agent == "" {
		return fmt.Errorf("run %s is unfinished (%s): resuming it needs the file of its agent %q, whose tools and model its log describes but cannot rebuild: polyloop resume %s --agent FILE%s",
			id, plan.Action, log.Started().Snapshot.Agent, id, a.storeFlag())
	}
	cfg, err := a.loadAgent(ctx, f.agent, f.quiet)
	if err != nil {
		return a.loadFailed(f.agent, err, in.wasCanceled())
	}
	defer cfg.Close()
	sinks, err := a.eventSinks(ctx, f.sinkFlags)
	if err != nil {
		return err
	}
	defer sinks.close()
	live, err := a.startLiveView(f.view, st, id)
	if err != nil {
		return err
	}
	defer live.close()
	in.begin()
	res, err := cfg.Runner(st, live.sinks(sinks.sinks)...).ResumeWith(ctx, id, cfg.Agent, polyloop.ResumeOptions{AllowConfigChange: f.allowChange, TakeOver: f.takeOver})
	sinks.ended(id, err)
	var mismatch *polyloop.SnapshotMismatchError
	if errors.As(err, &mismatch) {
		return fmt.Errorf("run %s: the agent differs from the run's snapshot in: %s\n(stored %s, current %s); resume with --allow-config-change to go on anyway (the override is recorded in the log)",
			id, strings.Join(mismatch.Fields, ", "), mismatch.StoredHash, mismatch.CurrentHash)
	}
	if err != nil {
		return a.runFailed(st, id, f.agent, err, in)
	}
	if !f.quiet {
		printPlan(a.stderr, *res.Plan)
		if res.Plan.Action == polyloop.PlanReconcile {
			if after, err := readRun(ctx, st, id); err == nil {
				printReconciled(a.stderr, after, res.Plan.LastSeq)
			}
		}
	}
	return a.report(res, f.agent, f.json)
}
