//go:build linux

package bwrapenv_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/bwrapenv"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/shellexec"
	"github.com/polyloop/polyloop/snapshotstore"
	"github.com/polyloop/polyloop/sqlitestore"
	"github.com/polyloop/polyloop/toolcallparser"
)

// The loop with a sandbox: a runner whose agent runs its shell actions in
// an environment of the sandbox backend, its log in SQLite and its
// snapshots in a directory beside it (dir/log.db, dir/snapshots,
// dir/envs), as one machine keeps them.

// loopSteps is how many actions a loop test's run takes; action i appends
// "line-i" to /work/lines and then sleeps a little (the crash campaign's
// kills land inside it too).
const loopSteps = 4

func loopTurns(steps int, command func(i int) string) []scriptmodel.Turn {
	var turns []scriptmodel.Turn
	for i := 1; i <= steps; i++ {
		turns = append(turns, scriptmodel.Call(fmt.Sprintf("call_%d", i), shellexec.ToolName, map[string]string{"command": command(i)}))
	}
	return append(turns, scriptmodel.Reply("done"))
}

func appendLine(i int) string {
	return fmt.Sprintf("echo line-%d >> /work/lines && sleep 0.05 && echo appended %d", i, i)
}

type loop struct {
	runner   *polyloop.Runner
	agent    polyloop.Agent
	store    *sqlitestore.Store
	provider *bwrapenv.Provider
}

// newLoop opens the loop of dir; turns script the model.
func newLoop(t testing.TB, dir string, turns []scriptmodel.Turn) *loop {
	l, err := openLoop(dir, testImages(t), turns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.store.Close() })
	return l
}

func openLoop(dir, images string, turns []scriptmodel.Turn) (*loop, error) {
	snaps, err := snapshotstore.OpenDir(filepath.Join(dir, "snapshots"))
	if err != nil {
		return nil, err
	}
	p, err := bwrapenv.New(bwrapenv.Options{Images: images, StateDir: filepath.Join(dir, "envs"), Snapshots: snaps})
	if err != nil {
		return nil, err
	}
	st, err := sqlitestore.Open(filepath.Join(dir, "log.db"), nil)
	if err != nil {
		return nil, err
	}
	ex, err := shellexec.New(shellexec.Options{InEnvironment: true, Dir: "/work", Timeout: 20 * time.Second})
	if err != nil {
		return nil, err
	}
	host := filepath.Join(dir, "host")
	if err := os.MkdirAll(host, 0o755); err != nil {
		return nil, err
	}
	agent := polyloop.Agent{Name: "envloop", Tools: ex.ToolSpecs(), Limits: polyloop.Limits{MaxSteps: 20},
		Environment: &polyloop.EnvSpec{Image: "busybox", WorkDir: "/work", Limits: polyloop.EnvLimits{PIDs: 64},
			Mounts: []polyloop.EnvMount{{Source: host, Target: "/host"}}}}
	r := &polyloop.Runner{Model: scriptmodel.New(turns...), Parser: toolcallparser.New(toolcallparser.Options{Tools: agent.Tools}),
		Executor: ex, Store: st, Environments: p}
	return &loop{runner: r, agent: agent, store: st, provider: p}, nil
}

// runOrResume starts the run, or resumes it when its log has records.
func (l *loop) runOrResume(ctx context.Context, runID string) (polyloop.RunResult, error) {
	log, err := polyloop.ReadLog(ctx, l.store, runID)
	if err != nil {
		return polyloop.RunResult{}, err
	}
	if log.Empty() {
		return l.runner.Run(ctx, runID, l.agent, polyloop.Task{Input: "append the lines"})
	}
	return l.runner.ResumeWith(ctx, runID, l.agent, polyloop.ResumeOptions{TakeOver: true})
}

// lastSnapshot is the last environment snapshot the run's log names.
func lastSnapshot(t testing.TB, log polyloop.RunLog) polyloop.EnvSnapshot {
	t.Helper()
	var ref polyloop.EnvSnapshot
	for _, r := range log.Records {
		switch b := r.Body.(type) {
		case *polyloop.ActionIntent:
			if b.EnvSnapshot != "" {
				ref = b.EnvSnapshot
			}
		case *polyloop.ActionResult:
			if b.EnvSnapshot != "" {
				ref = b.EnvSnapshot
			}
		case *polyloop.StepCompleted:
			if b.EnvSnapshot != "" {
				ref = b.EnvSnapshot
			}
		}
	}
	if ref == "" {
		t.Fatal("the log names no environment snapshot")
	}
	return ref
}

// readFile reads path in an environment created from ref.
func (l *loop) readFile(t testing.TB, runID string, ref polyloop.EnvSnapshot, path string) string {
	t.Helper()
	ctx := context.Background()
	e, err := l.provider.Create(ctx, polyloop.EnvSpec{RunID: runID + "-check", Image: "busybox", From: ref})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Destroy(ctx)
	res, err := e.Exec(ctx, polyloop.ExecRequest{Argv: []string{"cat", path}})
	if err != nil {
		t.Fatal(err)
	}
	return string(res.Stdout)
}

func readLog(t testing.TB, l *loop, runID string) polyloop.RunLog {
	t.Helper()
	log, err := polyloop.ReadLog(context.Background(), l.store, runID)
	if err != nil {
		t.Fatal(err)
	}
	log.RunID = runID
	return log
}

// checkLines: the file holds line-1 … line-n, each exactly once, in order.
func checkLines(t testing.TB, got string, n int) {
	t.Helper()
	var want strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&want, "line-%d\n", i)
	}
	if got != want.String() {
		t.Fatalf("/work/lines holds %q, want %q", got, want.String())
	}
}

// TestLoopInEnvironment: every action's intent names the snapshot it
// starts from and its settlement the snapshot after it; the environment's
// description is in the run's snapshot; the world the run left is in its
// last snapshot; nothing is left running.
func TestLoopInEnvironment(t *testing.T) {
	dir := t.TempDir()
	l := newLoop(t, dir, loopTurns(loopSteps, appendLine))
	res, err := l.runOrResume(context.Background(), "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != polyloop.StopCompleted {
		t.Fatalf("stop reason %s", res.StopReason)
	}
	log := readLog(t, l, "run-1")
	rs := log.Records[0].Body.(*polyloop.RunStarted)
	if d := rs.Snapshot.Environment; d == nil || d.Backend != bwrapenv.Backend || !polyloop.IsDigest(d.Image) {
		t.Fatalf("the snapshot's environment is %+v", d)
	}
	intents, settled := 0, 0
	var prevAfter polyloop.EnvSnapshot
	for _, r := range log.Records {
		switch b := r.Body.(type) {
		case *polyloop.ActionIntent:
			intents++
			if b.EnvSnapshot == "" || b.Replay != polyloop.RestoreAndReplay {
				t.Fatalf("intent %s: snapshot %q, replay %s", b.ActionID, b.EnvSnapshot, b.Replay)
			}
			if prevAfter != "" && b.EnvSnapshot != prevAfter {
				t.Fatalf("intent %s starts from %s, the previous action left %s", b.ActionID, b.EnvSnapshot, prevAfter)
			}
		case *polyloop.StepCompleted:
			if b.Outcome == nil {
				continue
			}
			settled++
			if b.EnvSnapshot == "" || b.Outcome.Status != polyloop.Executed {
				t.Fatalf("step %d: snapshot %q, status %s (%s)", b.Step, b.EnvSnapshot, b.Outcome.Status, b.Observation)
			}
			prevAfter = b.EnvSnapshot
		}
	}
	if intents != loopSteps || settled != loopSteps {
		t.Fatalf("%d intents, %d settled, want %d", intents, settled, loopSteps)
	}
	checkLines(t, l.readFile(t, "run-1", lastSnapshot(t, log), "/work/lines"), loopSteps)
	if left := leftovers(t, l.provider, "run-1"); len(left) > 0 {
		t.Fatalf("the run's environment was not destroyed: %v", left)
	}
}

// TestLoopRestoreAndReplay: an action cut short after its effect (the
// line is appended, then the invocation is cancelled) is of unknown
// outcome; the plan restores the snapshot its intent names and runs it
// again, and the line is in the world once.
func TestLoopRestoreAndReplay(t *testing.T) {
	dir := t.TempDir()
	slow := func(i int) string {
		if i == 2 {
			return "echo line-2 >> /work/lines && { [ -e /host/go ] || sleep 30; } && echo appended 2"
		}
		return appendLine(i)
	}
	l := newLoop(t, dir, loopTurns(3, slow))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := l.runOrResume(ctx, "run-2"); done <- err }()
	deadline := time.Now().Add(20 * time.Second)
	for !intentOf(t, l, "run-2", "a2") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // the line is written; the command sleeps
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled run returned %v", err)
	}
	plan, err := polyloop.PlanResume(readLog(t, l, "run-2"))
	if err != nil {
		t.Fatal(err)
	}
	if plan.Action != polyloop.PlanRestoreAndReplay || plan.ActionID != "a2" || plan.Attempt != 2 || plan.EnvSnapshot == "" {
		t.Fatalf("plan %+v", plan)
	}
	// The replay finds /host/go (a read-only host mount, outside every
	// snapshot) and does not wait.
	if err := os.WriteFile(filepath.Join(dir, "host", "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := l.runOrResume(context.Background(), "run-2")
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != polyloop.StopCompleted || res.Plan == nil || res.Plan.Action != polyloop.PlanRestoreAndReplay {
		t.Fatalf("resume: %s, plan %+v", res.StopReason, res.Plan)
	}
	log := readLog(t, l, "run-2")
	checkLines(t, l.readFile(t, "run-2", lastSnapshot(t, log), "/work/lines"), 3)
}

func intentOf(t testing.TB, l *loop, runID, actionID string) bool {
	log, err := polyloop.ReadLog(context.Background(), l.store, runID)
	if err != nil {
		return false
	}
	for _, r := range log.Records {
		if b, ok := r.Body.(*polyloop.ActionIntent); ok && b.ActionID == actionID {
			return true
		}
	}
	return false
}

// TestLoopIsolation: an action cannot read the driving process's
// environment (its keys) through /proc/$PPID/environ or any /proc entry,
// nor a host file outside what the agent mounts.
func TestLoopIsolation(t *testing.T) {
	const secret = "sk-polyloop-test-7d1c0ffee"
	t.Setenv("POLYLOOP_TEST_API_KEY", secret)
	dir := t.TempDir()
	hostFile := filepath.Join(dir, "secret.txt")
	if err := os.WriteFile(hostFile, []byte("host-only-"+secret), 0o644); err != nil {
		t.Fatal(err)
	}
	probe := "cat /proc/$PPID/environ; echo ppid-status=$?; cat /proc/*/environ; env; cat " + hostFile + "; echo host-status=$?; " +
		"grep -rs " + secret + " /work /etc /tmp /root /host /home 2>/dev/null | head -3; echo probed"
	l := newLoop(t, dir, []scriptmodel.Turn{
		scriptmodel.Call("call_1", shellexec.ToolName, map[string]string{"command": probe}), scriptmodel.Reply("done")})
	if _, err := l.runOrResume(context.Background(), "iso"); err != nil {
		t.Fatal(err)
	}
	var obs string
	for _, r := range readLog(t, l, "iso").Records {
		if b, ok := r.Body.(*polyloop.StepCompleted); ok && b.Outcome != nil {
			obs = b.Observation
		}
	}
	t.Logf("the probe saw:\n%s", obs)
	if !strings.Contains(obs, "probed") {
		t.Fatalf("the probe did not run: %q", obs)
	}
	if strings.Contains(obs, secret) {
		t.Fatalf("the action read the driver's key or the host's file: %q", obs)
	}
	if strings.Contains(obs, "ppid-status=0") || strings.Contains(obs, "host-status=0") {
		t.Fatalf("a read that must fail succeeded: %q", obs)
	}
}
