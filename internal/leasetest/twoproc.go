// Package leasetest holds the two-process lease scenario that the durable
// stores run: a real child process holds a run's lease while others try
// to drive the run, then is killed with SIGKILL.
package leasetest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/toolcallparser"
)

const envChild = "POLYLOOP_LEASETEST_CHILD"

// Opener opens the store a spec names, in a child process or the test's.
type Opener func(spec string) (polyloop.Store, error)

type childConfig struct {
	Spec, RunID, Mode, Ledger string
	Replay                    polyloop.ReplayPolicy
}

// MaybeChild plays the child's part and exits when this process was started
// by TwoProcesses; otherwise it returns at once. Call it first in the test
// that calls TwoProcesses.
func MaybeChild(open Opener) {
	raw := os.Getenv(envChild)
	if raw == "" {
		return
	}
	var c childConfig
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		fmt.Fprintln(os.Stderr, "child config:", err)
		os.Exit(3)
	}
	st, err := open(c.Spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(3)
	}
	r := runner(st, &ledgerExec{path: c.Ledger, hold: time.Hour, announce: true})
	ctx := context.Background()
	var res polyloop.RunResult
	if c.Mode == "run" {
		res, err = r.Run(ctx, c.RunID, agent(c.Replay), polyloop.Task{Input: "two processes"})
	} else {
		res, err = r.Resume(ctx, c.RunID, agent(c.Replay))
	}
	var held *polyloop.LeaseHeldError
	switch {
	case errors.As(err, &held):
		fmt.Printf("refused pid=%d token=%s\n", held.Holder.PID, held.Holder.Token)
	case err != nil:
		fmt.Printf("error %v\n", err)
	default:
		fmt.Printf("finished %s\n", res.StopReason)
	}
	os.Exit(0)
}

func agent(p polyloop.ReplayPolicy) polyloop.Agent {
	return polyloop.Agent{Name: "leasetest", System: "two processes, one run",
		Tools:  []polyloop.ToolSpec{{Name: "effect", Description: "a side effect with a ledger", Replay: p}},
		Limits: polyloop.Limits{MaxSteps: 5}}
}

func runner(st polyloop.Store, ex polyloop.ActionExecutor) *polyloop.Runner {
	return &polyloop.Runner{Model: scriptmodel.New(scriptmodel.Call("c1", "effect", map[string]string{}), scriptmodel.Reply("done")),
		Parser: toolcallparser.New(toolcallparser.Options{}), Executor: ex, Store: st}
}

// ledgerExec runs "effect": it appends "start PID" to the ledger, holds for
// hold (or until cancelled), and appends "end PID".
type ledgerExec struct {
	path     string
	hold     time.Duration
	announce bool // print "in-action" on stdout once started
}

func (e *ledgerExec) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	if err := appendLine(e.path, "start "+strconv.Itoa(os.Getpid())); err != nil {
		return polyloop.ActionOutcome{}, err
	}
	if e.announce {
		fmt.Println("in-action")
	}
	select {
	case <-time.After(e.hold):
	case <-ctx.Done():
		return polyloop.ActionOutcome{}, ctx.Err()
	}
	if err := appendLine(e.path, "end "+strconv.Itoa(os.Getpid())); err != nil {
		return polyloop.ActionOutcome{}, err
	}
	return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "effect done"}, nil
}

// appendLine appends one line in one write (O_APPEND), synced.
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// child is a running child process.
type child struct {
	cmd *exec.Cmd
	out *bufio.Scanner
}

func start(t *testing.T, test string, c childConfig) *child {
	t.Helper()
	raw, _ := json.Marshal(c)
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), envChild+"="+string(raw), "GORACE=atexit_sleep_ms=0")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return &child{cmd: cmd, out: bufio.NewScanner(out)}
}

// line returns the child's next line on stdout.
func (c *child) line(t *testing.T) string {
	t.Helper()
	if !c.out.Scan() {
		t.Fatalf("child %d ended its output: %v", c.cmd.Process.Pid, c.out.Err())
	}
	return c.out.Text()
}

// TwoProcesses runs the scenario once per replay policy: a child process
// starts the run and holds it in its action; this process and a second
// child are refused, naming the holder; the holder is killed with SIGKILL;
// this process then resumes the run — at its first attempt when
// deadWithin is 0, else within deadWithin — with the take-over recorded,
// and the ledger shows no action running in two processes at once.
func TwoProcesses(t *testing.T, test, spec string, open Opener, deadWithin time.Duration) {
	for _, p := range []polyloop.ReplayPolicy{polyloop.ReplaySafe, polyloop.NeverReplay} {
		t.Run(string(p), func(t *testing.T) { twoProcesses(t, test, spec, open, deadWithin, p) })
	}
}

func twoProcesses(t *testing.T, test, spec string, open Opener, deadWithin time.Duration, policy polyloop.ReplayPolicy) {
	ctx := context.Background()
	runID := fmt.Sprintf("two-%s-%d", policy, time.Now().UnixNano())
	ledger := t.TempDir() + "/ledger"
	cfg := childConfig{Spec: spec, RunID: runID, Mode: "run", Ledger: ledger, Replay: policy}
	holder := start(t, test, cfg)
	if got := holder.line(t); got != "in-action" {
		t.Fatalf("the holder printed %q, want in-action", got)
	}
	hpid := holder.cmd.Process.Pid

	st, err := open(spec)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := st.(interface{ Close() error }); ok {
		t.Cleanup(func() { c.Close() })
	}
	r := runner(st, &ledgerExec{path: ledger})
	_, err = r.Resume(ctx, runID, agent(policy))
	var he *polyloop.LeaseHeldError
	if !errors.As(err, &he) || he.Holder.PID != hpid {
		t.Fatalf("Resume while process %d holds the run: %v, want a *LeaseHeldError naming it", hpid, err)
	}
	cfg.Mode = "resume"
	if got := start(t, test, cfg).line(t); !strings.HasPrefix(got, fmt.Sprintf("refused pid=%d ", hpid)) {
		t.Fatalf("a second process resuming while %d holds the run: %q", hpid, got)
	}

	if err := holder.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	holder.cmd.Wait()
	if err := appendLine(ledger, "killed "+strconv.Itoa(hpid)); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	res, tries := resumeAfterDeath(t, r, runID, policy, deadWithin)
	t.Logf("the dead holder's lease was taken over %v after SIGKILL, at attempt %d", time.Since(killed).Round(time.Millisecond), tries)
	want := polyloop.StopCompleted
	if policy == polyloop.NeverReplay {
		want = polyloop.StopResumeStateUnknown
	}
	if res.StopReason != want {
		t.Fatalf("after the take-over: %s, want %s", res.StopReason, want)
	}
	checkTakeover(t, st, runID, hpid)
	checkLedger(t, ledger, policy)
}

// resumeAfterDeath resumes until the dead holder's lease is free: at the
// first attempt when deadWithin is 0.
func resumeAfterDeath(t *testing.T, r *polyloop.Runner, runID string, policy polyloop.ReplayPolicy, deadWithin time.Duration) (polyloop.RunResult, int) {
	t.Helper()
	start := time.Now()
	for tries := 1; ; tries++ {
		res, err := r.Resume(context.Background(), runID, agent(policy))
		if err == nil {
			return res, tries
		}
		if !errors.Is(err, polyloop.ErrLeaseHeld) || deadWithin == 0 {
			t.Fatalf("Resume after the holder was killed (attempt %d): %v", tries, err)
		}
		if time.Since(start) > deadWithin {
			t.Fatalf("the dead holder's lease is still held %v after SIGKILL (bound %v): %v", time.Since(start), deadWithin, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func checkTakeover(t *testing.T, st polyloop.Store, runID string, hpid int) {
	t.Helper()
	log, err := polyloop.ReadLog(context.Background(), st, runID)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range log.Records {
		if tk, ok := rec.Body.(*polyloop.LeaseTakeover); ok {
			if tk.Reason != polyloop.TakeoverHolderDead || tk.From.PID != hpid || tk.To.PID != os.Getpid() {
				t.Fatalf("take-over record %+v, want holder_dead from pid %d to %d", *tk, hpid, os.Getpid())
			}
			return
		}
	}
	t.Fatal("the log has no lease_takeover record")
}

// checkLedger: no action started while another process's was running; the
// killed holder's action ends with its death; with never_replay, nothing
// ran again.
func checkLedger(t *testing.T, path string, policy polyloop.ReplayPolicy) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	running := map[string]bool{}
	starts := 0
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		verb, pid, _ := strings.Cut(line, " ")
		switch verb {
		case "start":
			for other := range running {
				if other != pid {
					t.Fatalf("ledger line %d: process %s started the action while process %s's was running:\n%s", i+1, pid, other, data)
				}
			}
			running[pid] = true
			starts++
		case "end", "killed":
			delete(running, pid)
		}
	}
	want := 2
	if policy == polyloop.NeverReplay {
		want = 1
	}
	if starts != want {
		t.Fatalf("the action started %d times, want %d:\n%s", starts, want, data)
	}
}
