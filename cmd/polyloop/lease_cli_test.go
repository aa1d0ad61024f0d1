package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The agent of the graceful-stop test: step 2's command takes 5 seconds.
const stopAgent = `name: stopper
model:
  provider: script
  script:
    - {tool: bash, args: {command: "echo one"}}
    - {tool: bash, args: {command: "touch started; sleep 5; echo slept"}}
    - {text: "done"}
tools:
  shell: {dir: work, replay: REPLAY}
`

// The agent of the lease tests: step 1's command writes a ledger (its pid,
// the pid of the child it waits for, and when it ends) and sleeps in that
// child; run again (a replay), it finds its mark and does not sleep.
const holdAgent = `name: holder
model:
  provider: script
  script:
    - {tool: bash, args: {command: "if [ -e started-ID ]; then echo replayed; else echo start $$ >> ledger-ID; sleep 60 & echo child $! >> ledger-ID; touch started-ID; wait $!; echo end $$ >> ledger-ID; fi"}}
    - {text: "done"}
tools:
  shell: {dir: work, replay: replay_safe}
`

func newCLI(t *testing.T, store string) *cli {
	t.Helper()
	bin, err := exec.LookPath("polyloop")
	if err != nil {
		t.Fatalf("polyloop is not on PATH (TestMain installs it): %v", err)
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	return &cli{t: t, dir: dir, bin: bin, store: store}
}

func (c *cli) write(name, content string) {
	c.t.Helper()
	if err := os.WriteFile(filepath.Join(c.dir, name), []byte(content), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// background starts a command and returns it with a scanner over its
// standard error and a buffer collecting what was scanned.
func (c *cli) background(args ...string) (*exec.Cmd, *bufio.Scanner, *bytes.Buffer) {
	c.t.Helper()
	cmd := c.command(args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		c.t.Fatal(err)
	}
	cmd.Stdout = &bytes.Buffer{}
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, bufio.NewScanner(stderr), &bytes.Buffer{}
}

// waitFile waits for a file that a command of the run creates.
func (c *cli) waitFile(name string) {
	c.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(c.dir, "work", name)); err == nil {
			return
		}
	}
	c.t.Fatalf("work/%s did not appear", name)
}

func drain(sc *bufio.Scanner, into *bytes.Buffer) {
	for sc.Scan() {
		into.WriteString(sc.Text() + "\n")
	}
}

// awaitLine copies lines from sc into seen up to one containing substr.
func awaitLine(sc *bufio.Scanner, seen io.StringWriter, substr string) {
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), substr) {
			return
		}
	}
}

// signalRun runs agent.yaml as run id, sends the first signal once the
// action has started (work/started) and each next one once the command
// said it is stopping, and returns the exit code and standard error.
func (c *cli) signalRun(id string, sigs ...os.Signal) (int, string) {
	c.t.Helper()
	cmd, sc, seen := c.background("run", "agent.yaml", "task", "--id", id)
	c.waitFile("started")
	for i, sig := range sigs {
		if i > 0 {
			awaitLine(sc, seen, "stopping at the next step boundary")
		}
		if err := cmd.Process.Signal(sig); err != nil {
			c.t.Fatal(err)
		}
	}
	drain(sc, seen)
	cmd.Wait()
	return cmd.ProcessState.ExitCode(), seen.String()
}

func wantAll(t *testing.T, text string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}

// TestGracefulStopThenResume: one SIGINT during a 5-second shell action.
// The action completes and its result is recorded, the run stops
// unfinished at the step boundary (exit 130, saying so and what resume
// will do), and resume continues with the next step with nothing of
// unknown outcome.
func TestGracefulStopThenResume(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	c.write("agent.yaml", strings.ReplaceAll(stopAgent, "REPLAY", "never_replay"))
	code, stderr := c.signalRun("g1", os.Interrupt)
	if code != exitInterrupted {
		t.Fatalf("exit %d, want %d:\n%s", code, exitInterrupted, stderr)
	}
	wantAll(t, stderr,
		"SIGINT: stopping at the next step boundary (the action in progress finishes and is recorded)",
		"→ executed  slept",
		"stopped: run g1 stopped at a step boundary, as asked",
		"resume will start step 3",
		"polyloop resume g1 --agent agent.yaml")
	_, stdout, _ := c.run("show", "g1")
	if strings.Contains(stdout, "UNKNOWN") || !strings.Contains(stdout, "slept") {
		t.Fatalf("show g1 after the graceful stop:\n%s", stdout)
	}
	code, stdout, stderr = c.run("resume", "g1", "--agent", "agent.yaml")
	if code != exitOK || !strings.Contains(stdout, "run g1: completed after 3 steps") || !strings.Contains(stderr, "resume plan: start_step") {
		t.Fatalf("resume: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// TestSecondProcessRefused runs on SQLite and, when configured, on
// PostgreSQL: while one polyloop process drives a run, another resuming it
// is refused with exit 2, naming the holder's pid; SIGKILL of the holder
// ends its action's processes too (the shell and its child: no action runs
// in two processes at once, as the ledger shows), and resume goes on and
// replays the replay_safe action; --take-over takes a run from a live
// holder, which stops saying so.
func TestSecondProcessRefused(t *testing.T) {
	t.Parallel()
	for name, store := range testStores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newCLI(t, store)
			uniq := strconv.FormatInt(time.Now().UnixNano(), 36)
			refusedThenKilled(t, c, "k-"+uniq)
			takenOver(t, c, "t-"+uniq)
		})
	}
}

// testStores are the stores a CLI test runs on, by name: SQLite (the
// default store, "") and, when configured, PostgreSQL.
func testStores() map[string]string {
	stores := map[string]string{"sqlite": ""}
	if d := os.Getenv("POLYLOOP_TEST_POSTGRES"); d != "" {
		stores["postgres"] = d
	}
	return stores
}

func refusedThenKilled(t *testing.T, c *cli, id string) {
	c.write(id+".yaml", strings.ReplaceAll(holdAgent, "ID", id))
	holder, _, _ := c.background("run", id+".yaml", "task", "--id", id)
	c.waitFile("started-" + id)
	code, _, stderr := c.run("resume", id, "--agent", id+".yaml")
	want := "is held by another live process: pid " + strconv.Itoa(holder.Process.Pid) + " on "
	if code != exitError || !strings.Contains(stderr, want) || !strings.Contains(stderr, "--take-over") {
		t.Fatalf("resume while held: exit %d, want %d and %q:\n%s", code, exitError, want, stderr)
	}
	holder.Process.Signal(syscall.SIGKILL)
	holder.Wait()
	ledger := readLedger(t, c, id)
	if len(ledger) != 2 || ledger[0][0] != "start" || ledger[1][0] != "child" {
		t.Fatalf("the ledger of the killed holder's action: %q", ledger)
	}
	for _, entry := range ledger {
		waitGone(t, entry[1], "the killed holder's action ("+entry[0]+")")
	}
	code, stdout, stderr := c.run("resume", id, "--agent", id+".yaml")
	if code != exitOK || !strings.Contains(stdout, "completed after 2 steps") || !strings.Contains(stderr, "→ executed  replayed") {
		t.Fatalf("resume after SIGKILL of the holder: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	_, stdout, _ = c.run("export", id)
	if !strings.Contains(stdout, `"kind":"lease_takeover"`) || !strings.Contains(stdout, `"reason":"holder_dead"`) {
		t.Fatalf("the log does not record the take-over from the dead holder:\n%s", stdout)
	}
	_, stdout, _ = c.run("show", id)
	if want := "lease taken over (holder_dead): from pid " + strconv.Itoa(holder.Process.Pid) + " on "; !strings.Contains(stdout, want) {
		t.Fatalf("show lacks %q:\n%s", want, stdout)
	}
}

// readLedger reads the ledger the run's command wrote: its lines, each
// split in two (what, pid).
func readLedger(t *testing.T, c *cli, id string) [][2]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.dir, "work", "ledger-"+id))
	if err != nil {
		t.Fatal(err)
	}
	var entries [][2]string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		what, pid, _ := strings.Cut(line, " ")
		entries = append(entries, [2]string{what, pid})
	}
	return entries
}

// waitGone waits until the process pid has died (it may stay a zombie,
// unreaped by its new parent), and fails if it is still alive after 10
// seconds.
func waitGone(t *testing.T, pid, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return
		}
		if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return
		}
		if time.Now().After(deadline) {
			if n, err := strconv.Atoi(pid); err == nil {
				syscall.Kill(n, syscall.SIGKILL)
			}
			t.Fatalf("%s, pid %s, outlived the SIGKILL of polyloop", what, pid)
		}
	}
}

func takenOver(t *testing.T, c *cli, id string) {
	c.write(id+".yaml", strings.ReplaceAll(holdAgent, "ID", id))
	holder, sc, seen := c.background("run", id+".yaml", "task", "--id", id)
	c.waitFile("started-" + id)
	code, stdout, stderr := c.run("resume", id, "--agent", id+".yaml", "--take-over")
	if code != exitOK || !strings.Contains(stdout, "completed after 2 steps") {
		t.Fatalf("resume --take-over: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	drain(sc, seen)
	holder.Wait()
	if code := holder.ProcessState.ExitCode(); code != exitError || !strings.Contains(seen.String(), "another process took its lease over") {
		t.Fatalf("the holder taken over: exit %d, stderr:\n%s", code, seen.String())
	}
	_, stdout, _ = c.run("export", id)
	if !strings.Contains(stdout, `"reason":"forced"`) {
		t.Fatalf("the log does not record the forced take-over:\n%s", stdout)
	}
}

// TestSecondSignalCancels: a second SIGINT (here after a SIGTERM asked for
// the stop) cancels the 5-second action at once; the command says so and
// that resume will follow the never_replay policy, and resume does:
// resume_state_unknown.
func TestSecondSignalCancels(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	c.write("agent.yaml", strings.ReplaceAll(stopAgent, "REPLAY", "never_replay"))
	code, stderr := c.signalRun("c1", syscall.SIGTERM, os.Interrupt)
	if code != exitInterrupted {
		t.Fatalf("exit %d, want %d:\n%s", code, exitInterrupted, stderr)
	}
	wantAll(t, stderr,
		"SIGTERM: stopping at the next step boundary",
		"SIGINT again: cancelling at once",
		"cancelled: run c1 was cancelled at once by the second signal",
		"resume can only finish it resume_state_unknown: never_replay action a2 (bash) was in flight")
	if strings.Contains(stderr, "→ executed  slept") {
		t.Errorf("the action ran to its end despite the second signal:\n%s", stderr)
	}
	code, stdout, stderr := c.run("resume", "c1", "--agent", "agent.yaml")
	if code != exitStopped || !strings.Contains(stdout, "run c1: resume_state_unknown") {
		t.Fatalf("resume: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}
