package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The agent of the replay interruption tests: step 2's command takes 5
// seconds when work/slow exists, and prints the same either way, so a
// replay of a fast recording agrees with it.
const replayAgent = `name: replayer
model:
  provider: script
  script:
    - {tool: bash, args: {command: "echo one"}}
    - {tool: bash, args: {command: "if [ -e slow ]; then touch started; sleep 5; fi; echo slept"}}
    - {text: "done"}
limits: {max_steps: 5}
tools:
  shell: {dir: work, replay: never_replay}
`

// replaySignalled records run src, then replays it as rp with step 2 slow
// and sends the signals as signalRun does; it returns the exit code and
// standard error of the replay.
func replaySignalled(t *testing.T, sigs ...os.Signal) (*cli, int, string) {
	t.Helper()
	c := newCLI(t, "")
	c.write("agent.yaml", replayAgent)
	if code, stdout, stderr := c.run("run", "agent.yaml", "task", "--id", "src", "-q"); code != exitOK {
		t.Fatalf("recording src: exit %d\n%s%s", code, stdout, stderr)
	}
	c.write("work/slow", "")
	cmd, sc, seen := c.background("replay", "src", "--agent", "agent.yaml", "--id", "rp")
	c.waitFile("started")
	for i, sig := range sigs {
		if i > 0 {
			awaitLine(sc, seen, "stopping at the next step boundary")
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
	}
	drain(sc, seen)
	cmd.Wait()
	return c, cmd.ProcessState.ExitCode(), seen.String()
}

// TestReplayGracefulStop: polyloop replay takes signals as run does. The
// first SIGINT lets step 2's action finish and be recorded, the replay
// stops at the boundary (exit 130, saying so and how to continue it), and
// the same replay command with the same --id finishes it: no divergence.
func TestReplayGracefulStop(t *testing.T) {
	t.Parallel()
	c, code, stderr := replaySignalled(t, os.Interrupt)
	if code != exitInterrupted {
		t.Fatalf("exit %d, want %d:\n%s", code, exitInterrupted, stderr)
	}
	wantAll(t, stderr,
		"SIGINT: stopping at the next step boundary",
		"stopped: run rp stopped at a step boundary, as asked",
		"resume will start step 3",
		"polyloop replay src --agent agent.yaml --id rp --store sqlite:")
	_, stdout, _ := c.run("show", "rp")
	if strings.Contains(stdout, "UNKNOWN") || !strings.Contains(stdout, "slept") {
		t.Fatalf("show rp after the graceful stop:\n%s", stdout)
	}
	if err := os.Remove(filepath.Join(c.dir, "work", "slow")); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = c.run("replay", "src", "--agent", "agent.yaml", "--id", "rp")
	if code != exitOK || !strings.Contains(stdout, "replay rp of src: completed after 3 steps") || !strings.Contains(stdout, "no divergence") {
		t.Fatalf("continuing the replay: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	_, stdout, _ = c.run("show", "rp")
	if strings.Count(stdout, "run_started") > 1 || strings.Contains(stdout, "UNKNOWN") {
		t.Errorf("show rp after it was continued:\n%s", stdout)
	}
}

// TestReplaySecondSignalCancels: a second signal cancels the replay's
// action at once; the command says so and what resume will do (the
// never_replay action was in flight), and exits 130; continued, it
// finishes resume_state_unknown, exit 1 (a stop other than completed).
func TestReplaySecondSignalCancels(t *testing.T) {
	t.Parallel()
	c, code, stderr := replaySignalled(t, syscall.SIGTERM, os.Interrupt)
	if code != exitInterrupted {
		t.Fatalf("exit %d, want %d:\n%s", code, exitInterrupted, stderr)
	}
	wantAll(t, stderr,
		"SIGTERM: stopping at the next step boundary",
		"SIGINT again: cancelling at once",
		"cancelled: run rp was cancelled at once by the second signal",
		"resume can only finish it resume_state_unknown: never_replay action a2 (bash) was in flight",
		"polyloop replay src --agent agent.yaml --id rp --store sqlite:")
	code, stdout, stderr := c.run("replay", "src", "--agent", "agent.yaml", "--id", "rp")
	if code != exitStopped || !strings.Contains(stdout, "replay rp of src: resume_state_unknown") {
		t.Fatalf("continuing the cancelled replay: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// TestReplayIDOfAnotherRun: --id naming a run that is not a replay of the
// source is refused, and nothing is written to it.
func TestReplayIDOfAnotherRun(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	c.write("agent.yaml", replayAgent)
	for _, id := range []string{"src", "other"} {
		if code, _, stderr := c.run("run", "agent.yaml", "task", "--id", id, "-q"); code != exitOK {
			t.Fatalf("run %s: exit %d\n%s", id, code, stderr)
		}
	}
	_, before, _ := c.run("export", "other")
	code, _, stderr := c.run("replay", "src", "--agent", "agent.yaml", "--id", "other")
	if code != exitError || !strings.Contains(stderr, `run "other" exists and is not a replay of "src"`) {
		t.Fatalf("replay into another run: exit %d\n%s", code, stderr)
	}
	if _, after, _ := c.run("export", "other"); after != before {
		t.Errorf("the other run's log changed:\nbefore %s\nafter %s", before, after)
	}
}
