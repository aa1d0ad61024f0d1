//go:build linux

package bwrapenv_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/bwrapenv"
	"github.com/polyloop/polyloop/internal/envloop"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/shellexec"
)

// The loop with a sandbox (internal/envloop): a runner whose agent runs its
// shell actions in a sandbox, its log in SQLite and its snapshots in a
// directory beside it, as one machine keeps them.

// sandbox is the backend under test, for envloop.
func sandbox(images string) envloop.Backend {
	return envloop.Backend{Name: "bwrap", Image: "busybox", Mounts: true,
		Provider: func(dir string, snaps polyloop.BlobStore) (polyloop.EnvProvider, error) {
			return bwrapenv.New(bwrapenv.Options{Images: images, StateDir: filepath.Join(dir, "envs"), Snapshots: snaps})
		}}
}

// pooledSandbox is the backend with a pool of two started sandboxes and
// destroys in the background: a driver killed (or one that exits without
// Close, as envloop's children do) leaves its pooled sandboxes and the
// destroys it had under way, all of which Prune must find.
func pooledSandbox(images string) envloop.Backend {
	return envloop.Backend{Name: "bwrap-pooled", Image: "busybox", Mounts: true,
		Provider: func(dir string, snaps polyloop.BlobStore) (polyloop.EnvProvider, error) {
			return bwrapenv.New(bwrapenv.Options{Images: images, StateDir: filepath.Join(dir, "envs"), Snapshots: snaps,
				Pool: 2, DestroyInBackground: true})
		}}
}

type loop struct{ *envloop.Loop }

func newLoop(t testing.TB, dir string, turns []scriptmodel.Turn) loop {
	return loop{envloop.MustOpen(t, dir, sandbox(testImages(t)), turns)}
}

func (l loop) runOrResume(ctx context.Context, runID string) (polyloop.RunResult, error) {
	return l.RunOrResume(ctx, runID)
}

func readLog(t testing.TB, l loop, runID string) polyloop.RunLog { return l.ReadLog(t, runID) }

const loopSteps = envloop.Steps

var (
	loopTurns  = envloop.Turns
	appendLine = envloop.AppendLine
	checkLines = envloop.CheckLines
)

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
	checkLines(t, l.ReadFile(t, log, "/work/lines"), loopSteps)
	if left := leftovers(t, l.Provider, "run-1"); len(left) > 0 {
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
	checkLines(t, l.ReadFile(t, log, "/work/lines"), 3)
}

func intentOf(t testing.TB, l loop, runID, actionID string) bool {
	log, err := polyloop.ReadLog(context.Background(), l.Store, runID)
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
