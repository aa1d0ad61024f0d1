package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The agent of the interrupt test: step 2's command marks that it started,
// then sleeps; run again (a replay), it finds the mark and does not sleep.
const interruptAgent = `name: sleeper
model:
  provider: script
  temperature: TEMP
  script:
    - {tool: bash, args: {command: "echo one"}}
    - {tool: bash, args: {command: "if [ -e started ]; then echo replayed; else touch started; sleep 30; fi"}}
    - {text: "done"}
tools:
  shell: {dir: WORK, replay: replay_safe}
`

// cli runs polyloop (the test binary, installed on PATH by TestMain) in dir.
type cli struct {
	t   *testing.T
	dir string
	bin string
	// store is the --store of every command: empty for a SQLite file in
	// dir.
	store string
}

func (c *cli) command(args ...string) *exec.Cmd {
	cmd := exec.Command(c.bin, args...)
	cmd.Dir = c.dir
	store := c.store
	if store == "" {
		store = "sqlite:" + filepath.Join(c.dir, "store.db")
	}
	cmd.Env = append(os.Environ(), "POLYLOOP_STORE="+store, "NO_COLOR=1")
	return cmd
}

// run runs a command to its end and returns its exit code and output.
func (c *cli) run(args ...string) (int, string, string) {
	c.t.Helper()
	cmd := c.command(args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		c.t.Fatalf("polyloop %v: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// interrupt starts a run, waits until step 2's command is running, sends
// SIGINT twice — the first asks for a stop at the next step boundary, the
// second cancels at once — and returns the exit code and standard error.
func (c *cli) interrupt(agent, work, id string) (int, string) {
	c.t.Helper()
	cmd := c.command("run", agent, "task", "--id", id)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	var seen strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "step 2") && strings.Contains(sc.Text(), "action bash") {
			break
		}
	}
	// The action intent is durable (the event follows it); wait for the
	// command's mark so that SIGINT lands while it sleeps.
	mark := filepath.Join(c.dir, work, "started")
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(mark); err == nil {
			break
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		c.t.Fatal(err)
	}
	awaitLine(sc, &seen, "stopping at the next step boundary")
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		c.t.Fatal(err)
	}
	rest, _ := io.ReadAll(stderr)
	seen.Write(rest)
	_ = cmd.Wait()
	return cmd.ProcessState.ExitCode(), seen.String()
}

// TestInterruptThenResume sends SIGINT twice to a real polyloop process in
// the middle of an action: the second cancels it at once; it exits 130 and
// says what resume will do and how to run it; resume refuses to go on
// without the agent, and with a changed agent unless told; then it follows
// the replay policy: it replays the replay_safe action and completes.
func TestInterruptThenResume(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("polyloop")
	if err != nil {
		t.Fatalf("polyloop is not on PATH (TestMain installs it): %v", err)
	}
	dir := t.TempDir()
	c := &cli{t: t, dir: dir, bin: bin}
	writeAgent(t, dir, "agent.yaml", "work", "0")
	writeAgent(t, dir, "changed.yaml", "work", "0.5")
	writeAgent(t, dir, "agent2.yaml", "work2", "0")
	writeAgent(t, dir, "changed2.yaml", "work2", "0.5")

	start := time.Now()
	code, stderr := c.interrupt("agent.yaml", "work", "r1")
	if code != exitInterrupted {
		t.Fatalf("exit code %d, want %d; stderr:\n%s", code, exitInterrupted, stderr)
	}
	for _, want := range []string{
		"SIGINT: stopping at the next step boundary",
		"SIGINT again: cancelling at once",
		"cancelled: run r1 was cancelled at once by the second signal",
		"resume will replay action a2 (bash, replay_safe)",
		"run r1 is unfinished and resumable:\n  polyloop resume r1 --agent agent.yaml --store sqlite:",
	} {
		if !strings.Contains(stderr, want) {
			t.Fatalf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if time.Since(start) > 20*time.Second {
		t.Fatalf("the interrupted run took %v: SIGINT did not stop the sleeping command", time.Since(start))
	}

	code, _, stderr = c.run("resume", "r1")
	if code != exitError || !strings.Contains(stderr, "resuming it needs the file of its agent") {
		t.Fatalf("resume without --agent: exit %d, stderr:\n%s", code, stderr)
	}
	code, _, stderr = c.run("resume", "r1", "--agent", "changed.yaml")
	if code != exitError || !strings.Contains(stderr, "differs from the run's snapshot in: model.temperature") {
		t.Fatalf("resume with a changed agent: exit %d, stderr:\n%s", code, stderr)
	}
	code, stdout, stderr := c.run("resume", "r1", "--agent", "agent.yaml")
	if code != exitOK || !strings.Contains(stdout, "run r1: completed after 3 steps") {
		t.Fatalf("resume: exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"resume plan: replay_action", "its policy is replay_safe → run it again (attempt 2)", "→ executed  replayed"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("resume's stderr lacks %q:\n%s", want, stderr)
		}
	}
	_, stdout, _ = c.run("show", "r1")
	if !strings.Contains(stdout, "outcome UNKNOWN: intent without an outcome") || !strings.Contains(stdout, "observation: replayed") {
		t.Errorf("show r1:\n%s", stdout)
	}

	// Interrupted again, resumed with the changed agent by explicit request:
	// the override is recorded.
	if code, stderr := c.interrupt("agent2.yaml", "work2", "r2"); code != exitInterrupted {
		t.Fatalf("second run: exit %d:\n%s", code, stderr)
	}
	code, stdout, stderr = c.run("resume", "r2", "--agent", "changed2.yaml", "--allow-config-change", "--json", "-q")
	if code != exitOK || !strings.Contains(stdout, `"stop_reason": "completed"`) || !strings.Contains(stdout, `"action": "replay_action"`) {
		t.Fatalf("resume --allow-config-change: exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	_, stdout, _ = c.run("show", "r2")
	if !strings.Contains(stdout, "config override: ") || !strings.Contains(stdout, "fields model.temperature") {
		t.Errorf("show r2 does not show the override:\n%s", stdout)
	}
}

func writeAgent(t *testing.T, dir, name, work, temperature string) {
	t.Helper()
	src := strings.NewReplacer("TEMP", temperature, "WORK", work).Replace(interruptAgent)
	if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}
