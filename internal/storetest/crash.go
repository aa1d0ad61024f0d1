package storetest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/polylooptest"
)

// crashKills is how many kill points the crash test lands per store. Plain
// `go test` lands 50; CI's crash step asks for 1000 (-crash.kills=1000).
var crashKills = flag.Int("crash.kills", 50, "kill points the stores' crash tests land (at least)")

// CrashHarness says how to run the SIGKILL crash test on one store.
type CrashHarness struct {
	// Test names the test function that calls Crash; children re-run it,
	// so it must call Crash before anything else.
	Test string
	// Location returns where scenario sc keeps its log (a file path, a
	// schema); sc is negative for the calibration runs. Called in the
	// parent.
	Location func(t *testing.T, sc int) string
	// Open opens the store at loc, in a child or in the parent.
	Open func(loc string) (polyloop.Store, error)
	// InFlight arms s (as Open returned it) to call f inside each Append,
	// after its records were handed to the database and before the
	// Append's outcome is known.
	InFlight func(s polyloop.Store, f func())
	// Settle, when set, waits after a child died until what the dead
	// process left running on a database server has ended (a batch it
	// sent may still commit).
	Settle func(t *testing.T)
}

// Crash runs the SIGKILL crash test (SPEC §3.4, §7.2). Each scenario runs
// up to three children in a row on one run (the later ones resuming it);
// each child runs workload W (6 steps) and is SIGKILLed at a kill point
// drawn from the seed: before an Append, inside one (its records handed to
// the database, the outcome unknown), after one was acknowledged, inside an
// action after its side effect, or after a random delay. Half the scenarios
// give the tool replay_safe, half never_replay. After each kill the parent
// checks the log and counts:
//
//   - acknowledged records lost: the log holds fewer records than the child
//     saw acknowledged (prefix durability);
//   - records beyond their Append: after a self-kill the log holds more than
//     the acknowledged records, or, killed inside an Append, other than all
//     or none of that Append's (atomicity);
//   - logs that fail to plan: the log does not read or PlanResume refuses it;
//
// then it finishes the run in process and counts:
//
//   - resumed logs not equivalent to the uninterrupted run
//     (polylooptest.CheckEquivalent; with a never_replay tool, runs that
//     stopped resume_state_unknown are not compared);
//   - never-replay actions executed twice, from the journal every execution
//     appends its call id to, in whatever process it ran.
//
// Every count must be 0. The figures are logged. Scenarios go on until
// -crash.kills kills landed before their run finished. Kill points other
// than timed ones replay exactly: POLYLOOP_CRASH_SEED=n replays a whole
// schedule, POLYLOOP_CRASH_REPLAY=never:in-flight:5,after-append:2 one
// scenario (each scenario's kill points are logged).
func Crash(t *testing.T, h CrashHarness) {
	if loc := os.Getenv(envCrashLoc); loc != "" {
		crashChild(h, loc)
		return
	}
	if testing.Short() {
		t.Skip("re-executes the test binary; skipped with -short")
	}
	c := &crasher{t: t, h: h, dir: t.TempDir()}
	if v := os.Getenv(envCrashReplay); v != "" {
		policy := polyloop.ReplaySafe
		if rest, ok := strings.CutPrefix(v, "never:"); ok {
			policy, v = polyloop.NeverReplay, rest
		}
		kps, err := parseKillPoints(v)
		if err != nil {
			t.Fatal(err)
		}
		c.scenario(0, policy, kps, 0)
		c.report(0)
		return
	}
	c.campaign()
}

// crasher runs the scenarios of one crash test and keeps the tally.
type crasher struct {
	t     *testing.T
	h     CrashHarness
	dir   string
	tally crashTally
}

func (c *crasher) campaign() {
	seed := uint64(20250301)
	if v := os.Getenv(envCrashSeed); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	window := c.calibrate()
	c.t.Logf("seed %d (set %s to replay); a child run takes about %v", seed, envCrashSeed, window)
	start, sc := time.Now(), 0
	for ; c.tally.kills < *crashKills; sc++ {
		if sc >= 3**crashKills {
			c.t.Fatalf("only %d kills landed in %d scenarios", c.tally.kills, sc)
		}
		policy := polyloop.ReplaySafe
		if sc%2 == 1 {
			policy = polyloop.NeverReplay
		}
		kps := []KillPoint{drawKillPoint(rng, window), drawKillPoint(rng, window), drawKillPoint(rng, window)}
		c.scenario(sc, policy, kps, rng.Uint64())
		if sc%100 == 99 {
			c.t.Logf("%d scenarios, %d kills so far (%v)", sc+1, c.tally.kills, time.Since(start).Round(time.Second))
		}
	}
	c.report(sc)
	if len(c.tally.cuts) < 5 {
		c.t.Errorf("kills landed at only %d distinct log lengths: %v", len(c.tally.cuts), c.tally.cuts)
	}
}

// crashTally counts the kills that landed and the failures found.
type crashTally struct {
	kills, timed, resuming int
	kinds                  map[KillKind]int
	cuts                   map[int]int // log length after a kill: count
	inFlightCommitted      int         // in-flight kills whose Append was committed
	stoppedUnknown         int         // never-replay runs that ended resume_state_unknown
	replays                int         // replay-safe actions executed again
	fenced                 int         // children whose Append lost to another writer

	lost, beyond, unplannable, notEquivalent, twice int
}

func (c *crasher) report(scenarios int) {
	n := c.tally
	c.t.Logf("crash test: %d kills landed in %d scenarios (%d self-inflicted, %d timed; %d while resuming); by kind %v; log length at the kills: %v",
		n.kills, scenarios, n.kills-n.timed, n.timed, n.resuming, n.kinds, n.cuts)
	c.t.Logf("crash test: acknowledged records lost: %d; never-replay actions executed twice: %d; logs that fail to plan: %d; resumed logs not equivalent to the uninterrupted run: %d; records beyond their Append: %d",
		n.lost, n.twice, n.unplannable, n.notEquivalent, n.beyond)
	c.t.Logf("crash test: in-flight Appends found committed: %d; never-replay runs that stopped resume_state_unknown: %d; replay-safe actions executed again: %d; resuming children fenced by a dead writer's late commit: %d",
		n.inFlightCommitted, n.stoppedUnknown, n.replays, n.fenced)
	if n.lost+n.twice+n.unplannable+n.notEquivalent+n.beyond > 0 {
		c.t.Errorf("crash test: failures found (see above)")
	}
}

// scenario runs children on a fresh run, one per kill point, until one
// finishes the run instead of dying; then it finishes the run in process
// and checks it.
func (c *crasher) scenario(sc int, policy polyloop.ReplayPolicy, kps []KillPoint, seed uint64) {
	t := c.t
	t.Helper()
	loc, run := c.h.Location(t, sc), fmt.Sprintf("crash-%d", sc)
	journal := filepath.Join(c.dir, fmt.Sprintf("journal-%d", sc))
	s := c.open(loc)
	defer closeStore(s)
	t.Logf("scenario %d (%s): kill points %v", sc, policy, kps)
	have := 0
	for i, kp := range kps {
		r := c.child(childSpec{loc: loc, run: run, policy: policy, journal: journal, kp: kp, seed: seed + uint64(i)})
		if r.killed && c.h.Settle != nil {
			c.h.Settle(t)
		}
		c.checkLog(s, run, kp, &r, have)
		t.Logf("scenario %d, child %d: %v: killed %t, %d records after it, finished %t", sc, i, kp, r.killed, r.records, r.finished)
		if r.fenced {
			c.tally.fenced++
		}
		if !r.killed || r.finished {
			break
		}
		c.tally.add(kp, r, have > 0)
		have = r.records
	}
	c.finish(s, run, policy, journal, kps)
}

func (c *crasher) open(loc string) polyloop.Store {
	s, err := c.h.Open(loc)
	if err != nil {
		c.t.Fatalf("open %s: %v", loc, err)
	}
	return s
}

func closeStore(s polyloop.Store) {
	if c, ok := s.(io.Closer); ok {
		c.Close()
	}
}

func (n *crashTally) add(kp KillPoint, r childRun, resuming bool) {
	if n.kinds == nil {
		n.kinds, n.cuts = map[KillKind]int{}, map[int]int{}
	}
	n.kills++
	if !kp.Self() {
		n.timed++
	}
	if resuming {
		n.resuming++
	}
	n.kinds[kp.Kind]++
	n.cuts[r.records]++
	if r.committed {
		n.inFlightCommitted++
	}
}

// childSpec is what a crash child is told.
type childSpec struct {
	loc, run, journal string
	policy            polyloop.ReplayPolicy
	kp                KillPoint
	seed              uint64
}

// childRun is what became of one crash child.
type childRun struct {
	killed   bool
	fenced   bool // its Append lost to another writer (ErrSeqConflict)
	acked    int  // the last seq it saw acknowledged (-1: none)
	tried    int  // the last seq it handed to the store (-1: none)
	records  int  // in the log afterwards
	finished bool // the log holds a finished run
	// committed: killed in flight, its last Append was committed all the
	// same (its acknowledgement lost with the process).
	committed bool
	took      time.Duration // from "ready" to "done", when the child finished
}

// child starts a child (a timed kill is carried out from here), reads what
// it reports and waits for it.
func (c *crasher) child(spec childSpec) childRun {
	t := c.t
	t.Helper()
	ch := StartChild(t, c.h.Test, envCrashLoc+"="+spec.loc, envCrashRun+"="+spec.run, envCrashKill+"="+spec.kp.String(),
		fmt.Sprintf("%s=%d", envCrashSeed, spec.seed), envCrashPolicy+"="+string(spec.policy), envCrashJournal+"="+spec.journal)
	ready := time.Now()
	if spec.kp.Kind == KillTimed {
		timer := time.AfterFunc(time.Duration(spec.kp.N)*time.Microsecond, func() { ch.Cmd.Process.Signal(syscall.SIGKILL) })
		defer timer.Stop()
	}
	r := childRun{acked: -1, tried: -1}
	for {
		line, err := ch.Next()
		if err != nil {
			break
		}
		if seq, ok := strings.CutPrefix(line, "ack "); ok {
			r.acked, _ = strconv.Atoi(seq)
		} else if seq, ok := strings.CutPrefix(line, "try "); ok {
			r.tried, _ = strconv.Atoi(seq)
		} else if line == "done" {
			r.took = time.Since(ready)
		}
	}
	err := ch.Cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL:
		r.killed = true
	case errors.As(err, &ee) && ee.ExitCode() == exitFenced:
		r.fenced = true
		t.Logf("%v: child fenced: %s", spec.kp, ch.Stderr.String())
	default:
		t.Fatalf("%v: child failed: %v; stderr: %s", spec.kp, err, ch.Stderr.String())
	}
	return r
}

// checkLog checks the log after a child, which started from had records,
// against what the child reported and with the planner, counting failures,
// and fills in r's records, finished and committed.
func (c *crasher) checkLog(s polyloop.Store, run string, kp KillPoint, r *childRun, had int) {
	t := c.t
	t.Helper()
	l, err := polyloop.ReadLog(context.Background(), s, run)
	if err != nil {
		c.tally.unplannable++
		t.Errorf("%v: the log does not read after the child: %v", kp, err)
		return
	}
	n := len(l.Records)
	acked, tried := had, had // records acknowledged, and handed to the store, in all
	if r.acked >= 0 {
		acked = r.acked + 1
	}
	if r.tried >= 0 {
		tried = r.tried + 1
	}
	switch {
	case n < acked:
		c.tally.lost += acked - n
		t.Errorf("%v: the log holds %d records after the kill, but the child saw %d acknowledged", kp, n, acked)
	case r.killed && kp.Self() && n != acked && !(kp.Kind == KillInFlight && n == tried):
		c.tally.beyond++
		t.Errorf("%v: the log holds %d records after the kill; %d were acknowledged, %d handed to the store", kp, n, acked, tried)
	}
	r.records, r.committed = n, kp.Kind == KillInFlight && n == tried && tried > acked
	if n == 0 {
		return
	}
	plan, err := polyloop.PlanResume(l)
	if err != nil {
		c.tally.unplannable++
		t.Errorf("%v: log of %d records after the child: %v", kp, n, err)
		return
	}
	r.finished = plan.Action == polyloop.PlanAlreadyFinished
}

// finish resumes the run in process (the journal counts its executions
// too) and checks the finished log and the journal.
func (c *crasher) finish(s polyloop.Store, run string, policy polyloop.ReplayPolicy, journal string, kps []KillPoint) {
	t := c.t
	t.Helper()
	w := newCrashWorkload(&crashExec{journal: journal}, policy)
	res, err := w.runOrResume(context.Background(), s, run)
	if err == nil {
		err = w.check(res)
	}
	if err != nil {
		c.tally.notEquivalent++
		t.Errorf("kill points %v (%s): finishing the run after the kills: %v", kps, policy, err)
		return
	}
	l, err := polyloop.ReadLog(context.Background(), s, run)
	if err != nil {
		c.tally.unplannable++
		t.Errorf("kill points %v: the finished log does not read: %v", kps, err)
		return
	}
	c.countExecutions(journal, policy, kps)
	if res.StopReason == polyloop.StopResumeStateUnknown {
		c.tally.stoppedUnknown++
		return
	}
	if err := polylooptest.CheckEquivalent(l, polyloop.RunLog{Records: referenceLog(t, policy, run)}); err != nil {
		c.tally.notEquivalent++
		t.Errorf("kill points %v (%s): the log after the kills differs from the uninterrupted run's: %v", kps, policy, err)
	}
}

// countExecutions reads the journal: a never-replay action executed more
// than once is a failure; a replay-safe one is counted as replayed.
func (c *crasher) countExecutions(journal string, policy polyloop.ReplayPolicy, kps []KillPoint) {
	b, err := os.ReadFile(journal)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		c.t.Fatal(err)
	}
	seen := map[string]int{}
	for _, id := range strings.Fields(string(b)) {
		seen[id]++
		if seen[id] == 1 {
			continue
		}
		if policy == polyloop.NeverReplay {
			c.tally.twice++
			c.t.Errorf("kill points %v: never-replay action %s executed %d times", kps, id, seen[id])
		} else {
			c.tally.replays++
		}
	}
}

// referenceLog is the log of an uninterrupted run of the crash workload.
func referenceLog(t *testing.T, policy polyloop.ReplayPolicy, run string) []polyloop.Record {
	t.Helper()
	s := memstore.New()
	w := newCrashWorkload(&crashExec{}, policy)
	res, err := w.runOrResume(context.Background(), s, run)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Check(res); err != nil {
		t.Fatal(err)
	}
	return ReadAll(t, context.Background(), s, run)
}

// calibrate times uncrashed children (sleeping in actions as timed children
// do) from "ready" to "done" and returns the shortest time: the window in
// which timed kills land. (The shortest, because a loaded machine makes
// some runs much slower, and kills after "done" are wasted.)
func (c *crasher) calibrate() time.Duration {
	window := time.Hour
	never := KillPoint{Kind: KillTimed, N: int(time.Minute.Microseconds())}
	for i := range 3 {
		spec := childSpec{loc: c.h.Location(c.t, -1-i), run: fmt.Sprintf("calibrate-%d", i), policy: polyloop.ReplaySafe, kp: never, seed: uint64(i)}
		r := c.child(spec)
		if r.killed || r.took == 0 {
			c.t.Fatal("calibration child was killed or did not finish")
		}
		window = min(window, r.took)
	}
	return max(window, 10*time.Millisecond)
}
