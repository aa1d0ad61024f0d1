package sqlitestore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/bench/workload"
	"github.com/polyloop/polyloop/internal/storetest"
	"github.com/polyloop/polyloop/polylooptest"
	"github.com/polyloop/polyloop/sqlitestore"
)

// The crash test re-executes this test binary as child processes that run
// workload W on a SQLite file and die by SIGKILL at kill points drawn from a
// seed; the parent resumes and checks SPEC §7.2's equivalence property.
const (
	envChild  = "POLYLOOP_CRASH_CHILD"  // set in the child: the database path
	envKill   = "POLYLOOP_CRASH_KILL"   // set in the child: its kill point
	envSeed   = "POLYLOOP_CRASH_SEED"   // the child's sleep seed; in the parent, overrides the base seed
	envReplay = "POLYLOOP_CRASH_REPLAY" // in the parent: run one scenario with these kill points
	// crashSteps is the length of the crashed runs: short, so that the
	// 50 kill points stay fast.
	crashSteps = 6
	crashRun   = "crash-run"
	// minKills is how many replayable (self-inflicted) kills must land
	// before the run finished.
	minKills = 50
)

// crashNoop is workload W's noop for crash children: it SIGKILLs the
// process inside its dieAt-th execution, and with a generator it sleeps up
// to max before answering, so that timed kills land inside actions as well
// as inside commits. Its observation depends on neither, and its
// description is fixed, so the snapshot is the same either way.
type crashNoop struct {
	mu    sync.Mutex
	rng   *rand.Rand // nil: no sleeps
	max   time.Duration
	calls int
	dieAt int
}

func (e *crashNoop) Describe() polyloop.Component { return polyloop.Component{Name: "crashtest.noop"} }

func (e *crashNoop) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	e.mu.Lock()
	e.calls++
	call, d := e.calls, time.Duration(0)
	if e.rng != nil {
		d = time.Duration(e.rng.Int64N(int64(e.max)))
	}
	e.mu.Unlock()
	if call == e.dieAt {
		die()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return polyloop.ActionOutcome{}, ctx.Err()
	case <-t.C:
	}
	return workload.NoopExecutor{}.Execute(ctx, a)
}

// crashWorkload is the crashed runs' workload, with exec executing noop
// (nil: a crashNoop that neither dies nor sleeps). Every executor of these
// runs must describe itself as crashNoop does, or Resume would refuse a
// changed snapshot.
func crashWorkload(exec polyloop.ActionExecutor) workload.W {
	if exec == nil {
		exec = &crashNoop{}
	}
	return workload.W{Steps: crashSteps, Executor: exec}
}

// runOrResume runs the workload, or resumes it when the log has records.
func runOrResume(ctx context.Context, s polyloop.Store, w workload.W) (polyloop.RunResult, error) {
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

// crashChild is the child's body: open the file, arm the kill point, say
// "ready", run (reporting each acknowledged Append), say "done".
func crashChild(path string) {
	kp, err := parseKillPoint(os.Getenv(envKill))
	if err != nil {
		childFail("kill point", err)
	}
	seed, _ := strconv.ParseUint(os.Getenv(envSeed), 10, 64)
	s, err := sqlitestore.Open(path, nil)
	if err != nil {
		childFail("open", err)
	}
	cs, ex := &childStore{Store: s}, &crashNoop{}
	arm(kp, s, cs, ex, seed)
	fmt.Println("ready")
	w := crashWorkload(ex)
	res, err := runOrResume(context.Background(), cs, w)
	if err == nil {
		err = w.Check(res)
	}
	if err != nil {
		childFail("run", err)
	}
	fmt.Println("done")
	s.Close()
	os.Exit(0)
}

// arm sets the child up to die at kp.
func arm(kp killPoint, s *sqlitestore.Store, cs *childStore, ex *crashNoop, seed uint64) {
	at := func(k int) {
		if k == kp.n {
			die()
		}
	}
	switch kp.kind {
	case killBeforeAppend:
		cs.before = at
	case killAfterAppend:
		cs.after = at
	case killInCommit:
		var inside atomic.Bool
		cs.before = func(k int) { inside.Store(k == kp.n) }
		sqlitestore.SetAfterInsert(s, func(string) {
			if inside.Load() {
				die()
			}
		})
	case killInAction:
		ex.dieAt = kp.n
	case killTimed:
		ex.rng, ex.max = rand.New(rand.NewPCG(seed, 1)), 3*time.Millisecond
	}
}

func childFail(what string, err error) {
	fmt.Fprintf(os.Stderr, "child: %s: %v\n", what, err)
	os.Exit(3)
}

// TestCrashKill9Resume: in each scenario, up to two children in a row run
// workload W on a fresh file (the second one resuming) and are SIGKILLed at
// kill points drawn from the seed; then the parent resumes in process.
// After each kill the log must be valid for the planner and hold every
// record the child saw acknowledged (prefix durability), and after a
// self-kill nothing more (an Append killed inside its transaction left
// nothing). The final log must equal the reference run's modulo timestamps,
// seqs, call ids and attempts, and orphaned intents.
//
// Kill points other than "timed" replay exactly: POLYLOOP_CRASH_SEED=n
// replays a whole schedule, POLYLOOP_CRASH_REPLAY=in-commit:5,after-append:2
// one scenario (each scenario's kill points are logged).
func TestCrashKill9Resume(t *testing.T) {
	if path := os.Getenv(envChild); path != "" {
		crashChild(path)
		return
	}
	if testing.Short() {
		t.Skip("re-executes the test binary; skipped with -short")
	}
	ref := referenceCrashLog(t)
	if v := os.Getenv(envReplay); v != "" {
		kps, err := parseKillPoints(v)
		if err != nil {
			t.Fatal(err)
		}
		runScenario(t, ref, 0, kps, 0)
		return
	}
	seed := uint64(20250301)
	if v := os.Getenv(envSeed); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (set %s to replay)", seed, envSeed)
	rng := rand.New(rand.NewPCG(seed, 0))
	window := calibrate(t)
	t.Logf("reference log: %d records; child run takes about %v", len(ref), window)
	var tally crashTally
	for sc := 0; tally.self < minKills; sc++ {
		if sc >= 3*minKills {
			t.Fatalf("only %d self-kills landed in %d scenarios", tally.self, sc)
		}
		kps := []killPoint{drawKillPoint(rng, window), drawKillPoint(rng, window)}
		tally.add(runScenario(t, ref, sc, kps, rng.Uint64()))
	}
	t.Logf("%d replayable kills and %d timed kills before the run finished; by kind: %v; records in the log at each kill (length: count): %v",
		tally.self, tally.timed, tally.kinds, tally.cuts)
	if len(tally.cuts) < 5 {
		t.Errorf("kills landed at only %d distinct log lengths: %v", len(tally.cuts), tally.cuts)
	}
}

// crashTally counts the kills that landed.
type crashTally struct {
	self, timed int
	kinds       map[killKind]int
	cuts        map[int]int // log length after a kill: count
}

func (c *crashTally) add(kills []landedKill) {
	if c.kinds == nil {
		c.kinds, c.cuts = map[killKind]int{}, map[int]int{}
	}
	for _, k := range kills {
		if k.point.self() {
			c.self++
		} else {
			c.timed++
		}
		c.kinds[k.point.kind]++
		c.cuts[k.records]++
	}
}

type landedKill struct {
	point   killPoint
	records int
}

// runScenario runs children on a fresh file, one per kill point, until one
// finishes the run instead of dying; then it finishes the run in process and
// compares the log with the reference. It returns the kills that landed.
func runScenario(t *testing.T, ref []polyloop.Record, sc int, kps []killPoint, seed uint64) []landedKill {
	t.Helper()
	t.Logf("scenario %d: kill points %v", sc, kps)
	path := filepath.Join(t.TempDir(), fmt.Sprintf("crash%d.db", sc))
	var kills []landedKill
	have := 0
	for i, kp := range kps {
		r := runChild(t, path, kp, seed+uint64(i), have)
		t.Logf("scenario %d, child %d: %v: killed %t, %d records after it, finished %t", sc, i, kp, r.killed, r.records, r.finished)
		if !r.killed || r.finished {
			break
		}
		kills = append(kills, landedKill{kp, r.records})
		have = r.records
	}
	finishAndCompare(t, path, ref, kps)
	return kills
}

// childRun is what became of one crash child.
type childRun struct {
	killed   bool
	records  int           // in the log afterwards
	finished bool          // the log holds a finished run
	took     time.Duration // from "ready" to "done", when the child finished
}

// runChild starts a child on path, whose log holds had records, with kill
// point kp (a timed one is carried out from here), and waits for it. It
// checks the log afterwards against what the child saw acknowledged.
func runChild(t *testing.T, path string, kp killPoint, seed uint64, had int) childRun {
	t.Helper()
	c := startChild(t, "TestCrashKill9Resume", envChild+"="+path, envKill+"="+kp.String(), fmt.Sprintf("%s=%d", envSeed, seed))
	ready := time.Now()
	if kp.kind == killTimed {
		timer := time.AfterFunc(time.Duration(kp.n)*time.Microsecond, func() { c.cmd.Process.Signal(syscall.SIGKILL) })
		defer timer.Stop()
	}
	var r childRun
	acked := int64(had) - 1 // last acknowledged seq
	for {
		line, err := c.next()
		if err != nil {
			break
		}
		if seq, ok := strings.CutPrefix(line, "ack "); ok {
			acked, _ = strconv.ParseInt(seq, 10, 64)
		} else if line == "done" {
			r.took = time.Since(ready)
		}
	}
	err := c.cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL:
		r.killed = true
	default:
		t.Fatalf("%v: child failed: %v; stderr: %s", kp, err, c.stderr.String())
	}
	r.records, r.finished = checkPlannable(t, path, kp)
	checkAcknowledged(t, kp, r, int(acked+1))
	return r
}

// checkAcknowledged checks the log length after a child against the
// records it saw acknowledged: never fewer (prefix durability), and after a
// self-kill, never more.
func checkAcknowledged(t *testing.T, kp killPoint, r childRun, acked int) {
	t.Helper()
	if r.records < acked {
		t.Fatalf("%v: the log holds %d records after the kill, but the child saw %d acknowledged", kp, r.records, acked)
	}
	if r.killed && kp.self() && r.records != acked {
		t.Fatalf("%v: the log holds %d records after the kill, but only %d were acknowledged", kp, r.records, acked)
	}
}

// referenceCrashLog is the uninterrupted run's log.
func referenceCrashLog(t *testing.T) []polyloop.Record {
	t.Helper()
	s := newStore(t)
	w := crashWorkload(nil)
	res, err := runOrResume(context.Background(), s, w)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Check(res); err != nil {
		t.Fatal(err)
	}
	return storetest.ReadAll(t, context.Background(), s, crashRun)
}

// calibrate times uncrashed children (sleeping in actions as timed
// children do) from "ready" to "done" and returns the shortest time: the
// window in which timed kills land. (The shortest, because a loaded machine
// makes some runs much slower, and kills after "done" are wasted.)
func calibrate(t *testing.T) time.Duration {
	window := time.Hour
	never := killPoint{kind: killTimed, n: int(time.Minute.Microseconds())}
	for i := range 3 {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("calibrate%d.db", i))
		r := runChild(t, path, never, uint64(i), 0)
		if r.killed || r.took == 0 {
			t.Fatal("calibration child was killed or did not finish")
		}
		window = min(window, r.took)
	}
	return max(window, 10*time.Millisecond)
}

// checkPlannable opens the file after a child and checks the log with the
// planner; it returns the number of records and whether the run finished.
func checkPlannable(t *testing.T, path string, kp killPoint) (int, bool) {
	t.Helper()
	s, err := sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatalf("%v: open after the child: %v", kp, err)
	}
	defer s.Close()
	l, err := s.ReadLog(context.Background(), crashRun)
	if err != nil {
		t.Fatalf("%v: read after the child: %v", kp, err)
	}
	if l.Empty() {
		return 0, false
	}
	plan, err := polyloop.PlanResume(l)
	if err != nil {
		t.Fatalf("%v: log of %d records after the child: %v", kp, len(l.Records), err)
	}
	return len(l.Records), plan.Action == polyloop.PlanAlreadyFinished
}

// finishAndCompare resumes the run in process and compares its log with
// the reference.
func finishAndCompare(t *testing.T, path string, ref []polyloop.Record, kps []killPoint) {
	t.Helper()
	s, err := sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := crashWorkload(nil)
	res, err := runOrResume(context.Background(), s, w)
	if err != nil {
		t.Fatalf("kill points %v: resume after the kills: %v", kps, err)
	}
	if err := w.Check(res); err != nil {
		t.Fatalf("kill points %v: %v", kps, err)
	}
	got := storetest.ReadAll(t, context.Background(), s, crashRun)
	if err := polylooptest.CheckEquivalent(polyloop.RunLog{Records: got}, polyloop.RunLog{Records: ref}); err != nil {
		t.Fatalf("kill points %v: log after the kills differs from the reference: %v", kps, err)
	}
}
