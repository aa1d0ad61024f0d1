package sqlitestore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/storetest"
	"github.com/polyloop/polyloop/polylooptest"
	"github.com/polyloop/polyloop/sqlitestore"
)

// The crash test re-executes this test binary as a child process that runs
// workload W on a SQLite file and is killed with SIGKILL at a seeded random
// moment; the parent resumes and checks SPEC §7.2's equivalence property.
const (
	envChild = "POLYLOOP_CRASH_CHILD" // set in the child: the database path
	envSeed  = "POLYLOOP_CRASH_SEED"  // the child's seed; in the parent, overrides the base seed
	// crashSteps is the length of the crashed runs: short, so that the
	// 50 kill points stay fast.
	crashSteps = 6
	crashRun   = "crash-run"
	// minKills is how many kills must land before the run finished (kills
	// after the last record do not count).
	minKills = 50
)

// sleepyNoop is workload W's noop, sleeping up to max (from a seeded
// generator) before answering, so that kills land inside actions as well as
// inside commits. Its observation does not depend on the sleep, and its
// description is fixed, so the snapshot is the same with or without sleeps.
type sleepyNoop struct {
	mu  sync.Mutex
	rng *rand.Rand
	max time.Duration
}

func (e *sleepyNoop) Describe() polyloop.Component { return polyloop.Component{Name: "crashtest.noop"} }

func (e *sleepyNoop) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	if e.max > 0 {
		e.mu.Lock()
		d := time.Duration(e.rng.Int64N(int64(e.max)))
		e.mu.Unlock()
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return polyloop.ActionOutcome{}, ctx.Err()
		case <-t.C:
		}
	}
	return storetest.NoopExecutor{}.Execute(ctx, a)
}

func crashWorkload(seed uint64, maxSleep time.Duration) storetest.Workload {
	return storetest.Workload{Steps: crashSteps, Exec: &sleepyNoop{rng: rand.New(rand.NewPCG(seed, 1)), max: maxSleep}}
}

// runOrResume runs the workload, or resumes it when the log has records.
func runOrResume(ctx context.Context, s polyloop.Store, w storetest.Workload) (polyloop.RunResult, error) {
	l, err := s.ReadLog(ctx, crashRun)
	if err != nil {
		return polyloop.RunResult{}, err
	}
	r := w.Runner(s)
	if l.Empty() {
		return r.Run(ctx, crashRun, w.Agent(), w.Task())
	}
	return r.Resume(ctx, crashRun, w.Agent())
}

// crashChild is the child's body: open the file, say "ready", run.
func crashChild(path string) {
	seed, _ := strconv.ParseUint(os.Getenv(envSeed), 10, 64)
	s, err := sqlitestore.Open(path, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: open:", err)
		os.Exit(3)
	}
	fmt.Println("ready")
	res, err := runOrResume(context.Background(), s, crashWorkload(seed, 3*time.Millisecond))
	if err == nil {
		err = crashWorkload(0, 0).Check(res)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(3)
	}
	fmt.Println("done")
	s.Close()
	os.Exit(0)
}

// TestCrashKill9Resume: children run workload W on one file and are
// SIGKILLed at seeded random moments (a scenario kills up to two children in
// a row, the second one resuming); then the parent resumes in process. The
// final log must equal the reference run's modulo timestamps, seqs, call ids
// and attempts and orphaned intents, and every crashed log must be valid for
// the planner. Set POLYLOOP_CRASH_SEED to replay a schedule.
func TestCrashKill9Resume(t *testing.T) {
	if path := os.Getenv(envChild); path != "" {
		crashChild(path)
		return
	}
	if testing.Short() {
		t.Skip("re-executes the test binary; skipped with -short")
	}
	seed := uint64(20250301)
	if v := os.Getenv(envSeed); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (set %s to replay)", seed, envSeed)
	rng := rand.New(rand.NewPCG(seed, 0))
	ref := referenceCrashLog(t)
	window := calibrate(t)
	t.Logf("reference log: %d records; child run takes about %v", len(ref), window)
	kills, cuts := 0, map[int]int{}
	for sc := 0; kills < minKills; sc++ {
		if sc >= 3*minKills {
			t.Fatalf("only %d kills landed in %d scenarios", kills, sc)
		}
		path := filepath.Join(t.TempDir(), "crash.db")
		for range 2 {
			delay := time.Duration(rng.Int64N(int64(window)))
			killed, n, finished := killChild(t, path, rng.Uint64(), delay, nil)
			if !killed || finished {
				break
			}
			kills++
			cuts[n]++
		}
		finishAndCompare(t, path, ref)
	}
	t.Logf("%d kills before the run finished; records in the log at each kill (length: count): %v", kills, cuts)
	if len(cuts) < 5 {
		t.Errorf("kills landed at only %d distinct log lengths: %v", len(cuts), cuts)
	}
}

// referenceCrashLog is the uninterrupted run's log.
func referenceCrashLog(t *testing.T) []polyloop.Record {
	t.Helper()
	s := newStore(t)
	res, err := runOrResume(context.Background(), s, crashWorkload(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if err := crashWorkload(0, 0).Check(res); err != nil {
		t.Fatal(err)
	}
	return storetest.ReadAll(t, context.Background(), s, crashRun)
}

// calibrate times uncrashed children from "ready" to "done" and returns
// the shortest time: the window in which kills land. (The shortest, because
// a loaded machine makes some runs much slower, and kills after "done" are
// wasted.)
func calibrate(t *testing.T) time.Duration {
	window := time.Hour
	for i := range 3 {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("calibrate%d.db", i))
		var took time.Duration
		if killed, _, _ := killChild(t, path, uint64(i), time.Minute, &took); killed || took == 0 {
			t.Fatal("calibration child was killed or did not finish")
		}
		window = min(window, took)
	}
	return max(window, 10*time.Millisecond)
}

// killChild starts a child on path, waits for it to be ready, and SIGKILLs
// it after delay. It reports whether the kill landed before the child
// exited, and the number of records in the log afterwards and whether they
// hold a finished run; it checks the log with the planner. When took is not nil, it receives the time from "ready"
// to "done".
func killChild(t *testing.T, path string, seed uint64, delay time.Duration, took *time.Duration) (killed bool, records int, finished bool) {
	t.Helper()
	c := startChild(t, "TestCrashKill9Resume", envChild+"="+path, fmt.Sprintf("%s=%d", envSeed, seed))
	ready := time.Now()
	drained := make(chan struct{})
	go func() {
		if line, _ := c.out.ReadString('\n'); line == "done\n" && took != nil {
			*took = time.Since(ready)
		}
		io.Copy(io.Discard, c.out)
		close(drained)
	}()
	exited := make(chan struct{})
	go func() {
		select {
		case <-time.After(delay):
			c.cmd.Process.Signal(syscall.SIGKILL)
		case <-exited:
		}
	}()
	<-drained
	err := c.cmd.Wait()
	close(exited)
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL:
		killed = true
	default:
		t.Fatalf("child failed: %v; stderr: %s", err, c.stderr.String())
	}
	records, finished = checkPlannable(t, path)
	return killed, records, finished
}

// checkPlannable opens the file after a crash and checks the log with the
// planner; it returns the number of records and whether the run finished.
func checkPlannable(t *testing.T, path string) (int, bool) {
	t.Helper()
	s, err := sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatalf("open after a kill: %v", err)
	}
	defer s.Close()
	l, err := s.ReadLog(context.Background(), crashRun)
	if err != nil {
		t.Fatalf("read after a kill: %v", err)
	}
	if l.Empty() {
		return 0, false
	}
	plan, err := polyloop.PlanResume(l)
	if err != nil {
		t.Fatalf("log of %d records after a kill: %v", len(l.Records), err)
	}
	return len(l.Records), plan.Action == polyloop.PlanFinished
}

// finishAndCompare resumes the run in process and compares its log with
// the reference.
func finishAndCompare(t *testing.T, path string, ref []polyloop.Record) {
	t.Helper()
	s, err := sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := runOrResume(context.Background(), s, crashWorkload(0, 0))
	if err != nil {
		t.Fatalf("resume after crash: %v", err)
	}
	if err := crashWorkload(0, 0).Check(res); err != nil {
		t.Fatal(err)
	}
	got := storetest.ReadAll(t, context.Background(), s, crashRun)
	if err := polylooptest.CheckEquivalent(polyloop.RunLog{Records: got}, polyloop.RunLog{Records: ref}); err != nil {
		t.Fatalf("log after crashes differs from the reference: %v", err)
	}
}
