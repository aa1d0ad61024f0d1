package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/agentfile"
	"github.com/polyloop/polyloop/sqlitestore"
	"github.com/spf13/cobra"
)

// The demo's agent: a scripted model drives the real shell. Step 2's command
// sleeps, and the demo kills the process running the agent in the middle of
// it. The bash tool is declared replay_safe — these commands give the same
// result when run again — so resume replays step 2.
const demoAgent = `name: demo
system: You keep notes in a working directory, using the bash tool.
model:
  provider: script
  cost_per_token: 0.000002
  script:
    - tool: bash
      args: {command: "mkdir -p notes && echo 'the log is the source of truth' > notes/today.txt && echo saved"}
    - tool: bash
      args: {command: "sleep 2 && wc -w < notes/today.txt"}
    - text: "notes/today.txt holds 7 words."
parser:
  kind: toolcall
tools:
  shell:
    dir: work
    timeout_ms: 20000
    replay: replay_safe
limits:
  max_steps: 10
`

const (
	demoRunID = "demo-1"
	demoTask  = "Write today's note and count its words."
)

func newDemoCmd(a *app) *cobra.Command {
	var child string
	var keep bool
	c := &cobra.Command{
		Use:   "demo",
		Short: "Offline demo: a run killed in the middle of a step, then resumed from its log",
		Long: `An offline demo, nothing to configure. A scripted model drives the shell through
a short task in a temporary directory. The agent runs in a child process (this
program, started again), which is killed with SIGKILL while step 2's command is
running. The parent then reads the run's log, prints the resume plan — which row
of the resume table applied and why — resumes the run and prints the trajectory.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if child != "" {
				return a.demoChild(cmd.Context(), child)
			}
			return a.demo(cmd.Context(), keep)
		},
	}
	c.Flags().StringVar(&child, "child", "", "run the demo's agent in this directory (used by the demo itself)")
	c.Flags().BoolVar(&keep, "keep", false, "keep the temporary directory (agent file, SQLite log, work directory)")
	_ = c.Flags().MarkHidden("child")
	return c
}

// demoChild is the killed process: it runs the demo agent on the SQLite
// file of dir, printing progress on stderr.
func (a *app) demoChild(ctx context.Context, dir string) error {
	images, _ := os.ReadFile(filepath.Join(dir, "images-dir"))
	cfg, err := agentfile.Load(ctx, filepath.Join(dir, "agent.yaml"), demoAgentOptions(dir, string(images)))
	if err != nil {
		return err
	}
	defer cfg.Close()
	st, err := sqlitestore.Open(filepath.Join(dir, "polyloop.db"), nil)
	if err != nil {
		return err
	}
	defer st.Close()
	res, err := cfg.Runner(st, newProgress(a.terminalErr())).Run(ctx, demoRunID, cfg.Agent, polyloop.Task{Input: demoTask})
	if err != nil {
		return err
	}
	return fmt.Errorf("the child was not interrupted: the run finished (%s)", res.StopReason)
}

func (a *app) demo(ctx context.Context, keep bool) error {
	dir, err := os.MkdirTemp("", "polyloop-demo-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Fprintf(a.stdout, "demo directory: %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	agentPath := filepath.Join(dir, "agent.yaml")
	agentText := demoAgent
	images, missing := demoSandbox(dir)
	if missing == "" {
		agentText = demoSandboxAgent
		fmt.Fprintf(a.stdout, "== 0. the agent's shell runs in a sandbox of its own (bubblewrap, image %s)\n", filepath.Join(images, "busybox"))
		if err := os.WriteFile(filepath.Join(dir, "images-dir"), []byte(images), 0o644); err != nil {
			return err
		}
	} else if missing == "off" {
		fmt.Fprintf(a.stdout, "== 0. no sandbox here (POLYLOOP_DEMO_SANDBOX=off): the shell runs on this machine.\n")
	} else {
		fmt.Fprintf(a.stdout, "== 0. no sandbox here: the part where a killed action's file is restored needs %s.\n"+
			"   Showing the rest with the shell on this machine.\n", missing)
	}
	if err := os.WriteFile(agentPath, []byte(agentText), 0o644); err != nil {
		return err
	}
	st, err := sqlitestore.Open(filepath.Join(dir, "polyloop.db"), nil)
	if err != nil {
		return err
	}
	defer st.Close()

	fmt.Fprintf(a.stdout, "== 1. a child process runs the agent on %q\n", demoTask)
	seen, err := a.demoKill(ctx, dir, st)
	if err != nil {
		return err
	}
	log, err := polyloop.ReadLog(ctx, st, demoRunID)
	if err != nil {
		return err
	}
	log.RunID = demoRunID
	if err := a.demoPlan(log); err != nil {
		return err
	}
	return a.demoResume(ctx, dir, images, agentPath, st, seen)
}

// demoSeen is what the demo saw of the killed attempt's append, in the
// sandbox's files, before it killed the child.
type demoSeen int

const (
	demoSeenUnknown  demoSeen = iota // the sandbox's files were not found
	demoSeenAppended                 // the line was there
	demoSeenNot                      // the files were there, the line not yet
)

// demoKilledLine is the line step 2's command appends (demo_sandbox.go).
const demoKilledLine = "a crash costs the action, not the episode"

// demoJournalSeen looks for the killed attempt's line in the journal of
// the sandboxes under dir (the sandbox backend's upper layer: the files as
// the running command left them).
func demoJournalSeen(dir string) demoSeen {
	files, _ := filepath.Glob(filepath.Join(dir, "envs", "*", "rw", "upper", "work", "journal.txt"))
	if len(files) == 0 {
		return demoSeenUnknown
	}
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), demoKilledLine) {
			return demoSeenAppended
		}
	}
	return demoSeenNot
}

// demoKilledAttempt says what the killed attempt had done, as far as the
// demo saw it.
func demoKilledAttempt(seen demoSeen) string {
	switch seen {
	case demoSeenAppended:
		return "the killed attempt of step 2 had appended its line before the kill (the demo saw it in the sandbox's files)"
	case demoSeenNot:
		return "the killed attempt of step 2 had not yet appended its line when it was killed (the demo looked in the sandbox's files), so there was nothing to undo this time"
	}
	return "the demo could not look into the sandbox's files to see whether the killed attempt of step 2 had written its line"
}

// demoKill starts the child and kills it with SIGKILL once step 2's action
// intent is durable and its command has started; with a sandbox, once the
// command's append shows in the sandbox's files (or after 2 s). It
// reports what it saw of that append.
func (a *app) demoKill(ctx context.Context, dir string, st *sqlitestore.Store) (demoSeen, error) {
	exe, err := os.Executable()
	if err != nil {
		return demoSeenUnknown, err
	}
	cmd := exec.CommandContext(ctx, exe, "demo", "--child", dir)
	out, err := cmd.StderrPipe()
	if err != nil {
		return demoSeenUnknown, err
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		return demoSeenUnknown, fmt.Errorf("starting the child: %w", err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); copyPrefixed(a.stdout, out, "   child | ") }()
	waitErr := a.demoWaitForStep2(ctx, st)
	seen := demoSeenUnknown
	if waitErr == nil {
		time.Sleep(300 * time.Millisecond) // let the command run a little: the kill lands mid-sleep
		for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if seen = demoJournalSeen(dir); seen != demoSeenNot || time.Now().After(deadline) {
				break
			}
		}
		waitErr = cmd.Process.Kill()
	}
	wg.Wait()
	err = cmd.Wait()
	if waitErr != nil {
		return seen, fmt.Errorf("demo: %w (child: %v)", waitErr, err)
	}
	fmt.Fprintf(a.stdout, "   child killed with SIGKILL while step 2's command was running (%v)\n", err)
	return seen, nil
}

// demoWaitForStep2 polls the log until step 2's action intent is durable
// (and its step record is not).
func (a *app) demoWaitForStep2(ctx context.Context, st *sqlitestore.Store) error {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		log, err := polyloop.ReadLog(ctx, st, demoRunID)
		if err != nil {
			return err
		}
		intents, steps := log.ActionIntents(), log.Steps()
		if len(intents) >= 2 {
			if len(steps) >= 2 {
				return errors.New("step 2 completed before it could be interrupted")
			}
			return nil
		}
		if log.Finished() != nil {
			return errors.New("the run finished before step 2")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("step 2 did not start within 20s")
}

// demoPlan prints the log's tail and the resume plan, and what the plan
// would have been had the tool been never_replay.
func (a *app) demoPlan(log polyloop.RunLog) error {
	fmt.Fprintf(a.stdout, "\n== 2. the log after the kill (%d records)\n", len(log.Records))
	for _, r := range log.Records {
		fmt.Fprintf(a.stdout, "   %2d %s\n", r.Seq, recordLine(r))
	}
	plan, err := polyloop.PlanResume(log)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "\n== 3. the resume decision, from the log alone (polyloop.PlanResume)\n")
	printPlan(indent{a.stdout}, plan)
	if alt, err := polyloop.PlanResume(withPolicy(log, polyloop.NeverReplay)); err == nil {
		fmt.Fprintf(a.stdout, "   (had bash been never_replay, the same log would give: %s)\n", planRow(alt))
	}
	return nil
}

// withPolicy returns a copy of log whose last action intent has policy p.
func withPolicy(log polyloop.RunLog, p polyloop.ReplayPolicy) polyloop.RunLog {
	recs := append([]polyloop.Record(nil), log.Records...)
	for i := len(recs) - 1; i >= 0; i-- {
		if in, ok := recs[i].Body.(*polyloop.ActionIntent); ok {
			c := *in
			c.Replay = p
			recs[i].Body = &c
			break
		}
	}
	return polyloop.RunLog{RunID: log.RunID, Records: recs}
}

func (a *app) demoResume(ctx context.Context, dir, images, agentPath string, st *sqlitestore.Store, seen demoSeen) error {
	fmt.Fprintf(a.stdout, "\n== 4. resume in this process\n")
	cfg, err := agentfile.Load(ctx, agentPath, demoAgentOptions(dir, images))
	if err != nil {
		return err
	}
	defer cfg.Close()
	prog := newProgress(a.terminalOut())
	prog.prefix = "  resume | "
	res, err := cfg.Runner(st, prog).Resume(ctx, demoRunID, cfg.Agent)
	if err != nil {
		return err
	}
	log, err := polyloop.ReadLog(ctx, st, demoRunID)
	if err != nil {
		return err
	}
	log.RunID = demoRunID
	fmt.Fprintf(a.stdout, "\n== 5. the trajectory (polyloop show %s)\n", demoRunID)
	(&showWriter{w: a.stdout, limit: 200}).trajectory(buildTrajectory(log))
	if cfg.Environments != nil {
		if err := a.demoShowJournal(ctx, cfg, log); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "\nresult: %s — %q\n(%s; its intent named the sandbox's snapshot taken before it, "+
			"so resume restored that snapshot — whatever the half-done attempt wrote went with it — and ran the action again: the line is in the journal once. "+
			"bash is restore_and_replay here: it acts only inside a sandbox without network)\n", res.StopReason, res.FinalAnswer, demoKilledAttempt(seen))
		return nil
	}
	fmt.Fprintf(a.stdout, "\nresult: %s — %q\n(step 2's command ran twice: attempt 1 was killed, attempt 2 replayed it because bash is replay_safe in this agent)\n",
		res.StopReason, res.FinalAnswer)
	return nil
}

// recordLine describes a record on one line.
func recordLine(r polyloop.Record) string {
	switch b := r.Body.(type) {
	case *polyloop.RunStarted:
		return fmt.Sprintf("run_started        %s", b.SnapshotHash[:19]+"…")
	case *polyloop.ModelCallIntent:
		return fmt.Sprintf("model_call_intent  step %d %s", b.Step, b.CallID)
	case *polyloop.ModelCallResult:
		return fmt.Sprintf("model_call_result  step %d %s", b.Step, b.CallID)
	case *polyloop.ActionIntent:
		line := fmt.Sprintf("action_intent      step %d %s attempt %d %s: %s", b.Step, b.ActionID, b.Attempt, b.Replay, describeAction(&b.Action, 50))
		if b.EnvSnapshot != "" {
			line += " (from snapshot " + b.EnvSnapshot.Short() + ")"
		}
		return line
	case *polyloop.StepCompleted:
		status := string(b.Decision)
		if b.Outcome != nil {
			status = string(b.Outcome.Status)
		}
		return fmt.Sprintf("step_completed     step %d %s: %s", b.Step, status, oneLine(b.Observation+b.Answer, 40))
	case *polyloop.RunFinished:
		return fmt.Sprintf("run_finished       %s", b.StopReason)
	}
	return string(r.Kind())
}

// copyPrefixed copies lines from r to w with a prefix.
func copyPrefixed(w io.Writer, r io.Reader, prefix string) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fmt.Fprintln(w, prefix+sc.Text())
	}
}

// indent writes through to w, indenting every line by three spaces.
type indent struct{ w io.Writer }

func (i indent) Write(p []byte) (int, error) {
	_, err := fmt.Fprint(i.w, "   "+string(p))
	return len(p), err
}
