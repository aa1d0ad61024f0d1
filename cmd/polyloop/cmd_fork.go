package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/polyloop/polyloop"
	traj "github.com/polyloop/polyloop/internal/trajectory"
	"github.com/polyloop/polyloop/replaymodel"
	"github.com/spf13/cobra"
)

type forkFlags struct {
	sinkFlags
	atStep int
	agent  string
	id     string
	json   bool
}

func newForkCmd(a *app) *cobra.Command {
	var f forkFlags
	c := &cobra.Command{
		Use:   "fork RUN_ID --at-step N --agent AGENT.yaml [--id NEW]",
		Short: "Start a counterfactual run from step N of a run, without paying for the prefix",
		Long: `fork starts a new run that begins where RUN_ID stood at the end of step N: its
log names the source and copies the source's records of steps 1..N (nothing of
them runs again: no model call is paid for, no action repeats), then it goes on
under AGENT.yaml. With a changed agent (another system prompt, parser, tool
set), the fork records how its configuration differs from the source's and the
model sees the new configuration from step N+1 on. N may be 0: the same task,
from the start. A step whose actions are of unknown outcome cannot be forked at.

The copied steps count in the source's totals only, so statistics over a run
and its forks count each billed call once.

` + exitCodesHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.fork(cmd.Context(), args[0], f)
		},
	}
	c.Flags().IntVar(&f.atStep, "at-step", -1, "the last step of the source to keep (required; 0: none)")
	c.Flags().StringVar(&f.agent, "agent", "", "the agent file to go on with (required: the source's, or a changed one)")
	c.Flags().StringVar(&f.id, "id", "", "the new run's id (default: a new ULID)")
	c.Flags().BoolVar(&f.json, "json", false, "print the result as JSON on standard output")
	c.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "no progress lines")
	c.Flags().StringVar(&f.events, "events", "", "append the run's events to this file as JSON lines")
	_ = c.MarkFlagRequired("agent")
	return c
}

func (a *app) fork(parent context.Context, src string, f forkFlags) error {
	if f.atStep < 0 {
		return errors.New("--at-step N is required (0 forks before the first step)")
	}
	in := newInterruption(parent, a.stderr)
	defer in.close()
	ctx := in.ctx
	cfg, err := a.loadAgent(ctx, f.agent, f.quiet)
	if err != nil {
		return a.loadFailed(f.agent, err, in.wasCanceled())
	}
	defer cfg.Close()
	st, err := openStore(ctx, a.store, existingStore)
	if err != nil {
		return err
	}
	defer st.Close()
	sinks, err := a.eventSinks(ctx, f.sinkFlags)
	if err != nil {
		return err
	}
	defer sinks.close()
	id := f.id
	if id == "" {
		id = polyloop.NewRunID()
	}
	in.begin()
	res, err := cfg.Runner(st, sinks.sinks...).Fork(ctx, src, f.atStep, id, cfg.Agent)
	sinks.ended(id, err)
	if err != nil {
		if errors.Is(err, polyloop.ErrForkPoint) || errors.Is(err, polyloop.ErrRunNotFound) {
			return err
		}
		return a.runFailed(st, id, f.agent, err, in)
	}
	fmt.Fprintf(a.stderr, "run %s: forked from %s at step %d\n", id, src, f.atStep)
	return a.report(res, f.agent, f.json)
}

type replayFlags struct {
	agent string
	id    string
	match string
	json  bool
}

func newReplayCmd(a *app) *cobra.Command {
	var f replayFlags
	c := &cobra.Command{
		Use:   "replay RUN_ID --agent AGENT.yaml [--id NEW] [--match structure|exact|steps]",
		Short: "Re-run a recorded trajectory with the model answered from its log",
		Long: `replay runs RUN_ID's task again as a new run, with the model's replies taken
from RUN_ID's log instead of a model: the parser and executor of AGENT.yaml run
for real, and nothing is spent on a model. Use it to test a new parser or
executor on recorded trajectories. It reports the first step at which the
replay's decision or outcome differs from the recorded run, and stores the
replay as its own run, linked to the recorded one.

--match says what of each request must agree with what the recorded model was
shown (see package replaymodel): structure (default), exact, or steps.

A first SIGINT or SIGTERM stops the replay at the next step boundary (the
action in progress finishes and is recorded); a second cancels at once. The
same command with the same --id (and --match) continues a replay that did not
finish, as resume continues a run; an --id naming any other run is refused.

` + exitCodesHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.replay(cmd.Context(), args[0], f)
		},
	}
	c.Flags().StringVar(&f.agent, "agent", "", "the agent file whose parser and executor run (required)")
	c.Flags().StringVar(&f.id, "id", "", "the replay's run id (default: a new ULID); an unfinished replay of RUN_ID is continued")
	c.Flags().StringVar(&f.match, "match", "structure", "what must agree: structure, exact or steps")
	c.Flags().BoolVar(&f.json, "json", false, "print the result and the divergence as JSON")
	_ = c.MarkFlagRequired("agent")
	return c
}

func (a *app) replay(parent context.Context, src string, f replayFlags) error {
	in := newInterruption(parent, a.stderr)
	defer in.close()
	ctx := in.ctx
	cfg, err := a.loadAgent(ctx, f.agent, false)
	if err != nil {
		return a.loadFailed(f.agent, err, in.wasCanceled())
	}
	defer cfg.Close()
	st, err := openStore(ctx, a.store, existingStore)
	if err != nil {
		return err
	}
	defer st.Close()
	log, err := readRun(ctx, st, src)
	if err != nil {
		return err
	}
	id, again, err := a.replayID(ctx, st, f.id)
	if err != nil {
		return err
	}
	opts := replaymodel.Options{Match: replaymodel.Match(f.match)}
	in.begin()
	var res polyloop.RunResult
	var diff polyloop.RunDiff
	if again {
		res, diff, err = replaymodel.Resume(ctx, *cfg.Runner(st), log, id, cfg.Agent, opts)
	} else {
		res, diff, err = replaymodel.Replay(ctx, *cfg.Runner(st), log, id, cfg.Agent, opts)
	}
	if err != nil {
		if e := a.interrupted(st, id, a.replayCommand(src, id, f), err, in); e != nil {
			return e
		}
		return fmt.Errorf("replay of %s: %w", src, err)
	}
	if f.json {
		if err := writeJSON(a.machineOut(), struct {
			Result polyloop.RunResult `json:"result"`
			Diff   polyloop.RunDiff   `json:"diff"`
		}{res, diff}); err != nil {
			return err
		}
		return resultExit(res)
	}
	fmt.Fprintf(a.stdout, "replay %s of %s: %s after %s\n", id, src, orUnfinished(res), traj.StepsPhrase(res.Totals))
	replayLog, err := readRun(ctx, st, id)
	if err != nil {
		return err
	}
	printDivergence(a.stdout, diff, [2]polyloop.RunLog{log, replayLog})
	return resultExit(res)
}

// replayID is the replay's run id, and whether that run exists already: a
// replay of the source that did not finish, which the command continues.
func (a *app) replayID(ctx context.Context, st polyloop.Store, id string) (string, bool, error) {
	if id == "" {
		return polyloop.NewRunID(), false, nil
	}
	log, err := polyloop.ReadLog(ctx, st, id)
	if err != nil {
		return "", false, err
	}
	return id, !log.Empty(), nil
}

// replayCommand is the command that continues the replay id of src.
func (a *app) replayCommand(src, id string, f replayFlags) string {
	cmd := fmt.Sprintf("polyloop replay %s --agent %s --id %s", src, f.agent, id)
	if f.match != string(replaymodel.MatchStructure) {
		cmd += " --match " + f.match
	}
	return cmd + a.storeFlag()
}

func orUnfinished(res polyloop.RunResult) string {
	if res.StopReason == "" {
		return "unfinished"
	}
	return string(res.StopReason)
}

type diffFlags struct {
	json bool
	// files: the files that differ between the runs' environments, at
	// step (0: their last snapshots).
	files bool
	step  int
}

func newDiffCmd(a *app) *cobra.Command {
	var f diffFlags
	c := &cobra.Command{
		Use:   "diff RUN_A RUN_B [--json]",
		Short: "Where two runs part: aligned by step, the first divergence and the snapshot diff",
		Long: `diff compares two runs step by step, aligned by step number: the reply, the
decision, the actions, their outcomes and observations, then the number of
steps and how each finished. It prints how their configurations differ and the
first step where they part; exit 0 when they agree, 1 when they differ.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("step") {
				f.step = lastStep
			}
			return a.diff(cmd.Context(), args[0], args[1], f)
		},
	}
	c.Flags().BoolVar(&f.json, "json", false, "print the comparison as JSON")
	c.Flags().BoolVar(&f.files, "files", false, "also list the files that differ between the runs' environments (their snapshots at --step, else their last)")
	c.Flags().IntVar(&f.step, "step", 0, "with --files: compare the environments at the end of this step, 0: before the first action")
	return c
}

func (a *app) diff(ctx context.Context, ida, idb string, f diffFlags) error {
	st, err := openStore(ctx, a.store, readOnlyStore)
	if err != nil {
		return err
	}
	defer st.Close()
	var logs [2]polyloop.RunLog
	for i, id := range []string{ida, idb} {
		if logs[i], err = readRun(ctx, st, id); err != nil {
			return err
		}
	}
	d := polyloop.DiffRuns(logs[0], logs[1])
	if f.json {
		if err := writeJSON(a.machineOut(), d); err != nil {
			return err
		}
	} else {
		printDivergence(a.stdout, d, logs)
	}
	if f.files {
		paths, missing, err := a.envFileDiff(ctx, ida, idb, f.step)
		if err != nil {
			return err
		}
		if missing != "" {
			fmt.Fprintf(a.stdout, "files: %s\n", missing)
			return &exitErr{code: exitStopped}
		}
		fmt.Fprintf(a.stdout, "files that differ between the environments: %d\n", len(paths))
		for _, p := range paths {
			fmt.Fprintf(a.stdout, "  %-8s %s\n", p.Kind, p.Path)
		}
		if len(paths) > 0 {
			return &exitErr{code: exitStopped}
		}
	}
	if d.First != nil || len(d.Snapshot) > 0 {
		return &exitErr{code: exitStopped}
	}
	return nil
}

// printDivergence says how two runs differ: their configurations (see
// configDiff) and their first divergence.
func printDivergence(w io.Writer, d polyloop.RunDiff, logs [2]polyloop.RunLog) {
	a, b := logs[0].RunID, logs[1].RunID
	if fields := configDiff(d.Snapshot, logs); len(fields) > 0 {
		fmt.Fprintf(w, "configuration differs in: %s\n", strings.Join(fields, ", "))
	}
	if d.First == nil {
		fmt.Fprintf(w, "no divergence: %s and %s agree on all %d steps%s and how they finished\n", a, b, d.StepsA, copiedOf(logs))
		return
	}
	v := d.First
	where := fmt.Sprintf("step %d", v.Step)
	if v.What == "outcome" || v.What == "observation" {
		where += fmt.Sprintf(", action %d", v.Index+1)
	}
	fmt.Fprintf(w, "first divergence at %s (%s):\n  %s: %s\n  %s: %s\n", where, v.What, a, oneLine(v.A, 300), b, oneLine(v.B, 300))
}

// copiedOf says which of two runs copied steps from a source, as
// traj.StepCount says them: " (f: 2 copied)", or "".
func copiedOf(logs [2]polyloop.RunLog) string {
	var parts []string
	for _, l := range logs {
		if f := l.Started().ForkedFrom; f != nil && f.AtStep > 0 {
			parts = append(parts, fmt.Sprintf("%s: %d copied", l.RunID, f.AtStep))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// configDiff is the list of snapshot fields in which two runs'
// configurations differ, with a model client replaced by another kind (its
// name differs: a replay's answers from a log, another provider) said once,
// by its names, instead of its configuration fields, which do not compare.
func configDiff(fields []string, logs [2]polyloop.RunLog) []string {
	a, _ := logs[0].Snapshot()
	b, _ := logs[1].Snapshot()
	if a.ModelClient.Name == b.ModelClient.Name {
		return fields
	}
	out := []string{fmt.Sprintf("the model client (%s, replaced by %s)", a.ModelClient.Name, b.ModelClient.Name)}
	return append(out, replaymodel.AgentChanges(a, b)...)
}
