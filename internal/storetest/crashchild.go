package storetest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/workload"
)

// The crash test's environment: the parent sets them for each child.
const (
	envCrashLoc     = "POLYLOOP_CRASH_CHILD"   // where the store is (CrashHarness.Location)
	envCrashRun     = "POLYLOOP_CRASH_RUN"     // the run's id
	envCrashKill    = "POLYLOOP_CRASH_KILL"    // the child's kill point
	envCrashSeed    = "POLYLOOP_CRASH_SEED"    // the child's sleep seed; in the parent, overrides the base seed
	envCrashPolicy  = "POLYLOOP_CRASH_POLICY"  // the tool's replay policy
	envCrashJournal = "POLYLOOP_CRASH_JOURNAL" // the file each execution appends its call id to
	envCrashReplay  = "POLYLOOP_CRASH_REPLAY"  // in the parent: one scenario, [never:]kind:n,kind:n
)

// crashSteps is the length of the crashed runs: short, so that many kill
// points stay fast.
const crashSteps = 6

// crashExec is the crash runs' noop: it appends the action's call id to its
// journal (the action's side effect, which survives the process), SIGKILLs
// the process inside its dieAt-th execution right after that, and with a
// generator sleeps up to max before answering, so that timed kills land
// inside actions as well as inside commits. Its observation depends on
// none of this, and its description is fixed, so the snapshot is the same
// either way.
type crashExec struct {
	journal string // "" for none
	mu      sync.Mutex
	rng     *rand.Rand // nil: no sleeps
	max     time.Duration
	calls   int
	dieAt   int
}

func (e *crashExec) Describe() polyloop.Component { return polyloop.Component{Name: "crashtest.noop"} }

func (e *crashExec) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	e.mu.Lock()
	e.calls++
	call, d := e.calls, time.Duration(0)
	if e.rng != nil {
		d = time.Duration(e.rng.Int64N(int64(e.max)))
	}
	e.mu.Unlock()
	if err := e.record(a.CallID); err != nil {
		return polyloop.ActionOutcome{}, err
	}
	if call == e.dieAt {
		Die()
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

// record appends the call id to the journal: a write the kernel keeps
// whatever becomes of the process.
func (e *crashExec) record(callID string) error {
	if e.journal == "" {
		return nil
	}
	f, err := os.OpenFile(e.journal, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = io.WriteString(f, callID+"\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// crashWorkload is the crashed runs' workload W, its tool of the given
// replay policy, executing with exec.
type crashWorkload struct {
	workload.W
	policy polyloop.ReplayPolicy
}

func newCrashWorkload(exec polyloop.ActionExecutor, policy polyloop.ReplayPolicy) crashWorkload {
	return crashWorkload{W: workload.W{Steps: crashSteps, Executor: exec}, policy: policy}
}

// Agent is W's agent with the tool's policy.
func (w crashWorkload) Agent() polyloop.Agent {
	a := w.W.Agent()
	a.Tools[0].Replay = w.policy
	return a
}

// runOrResume runs the workload as run, or resumes it when the log has
// records.
func (w crashWorkload) runOrResume(ctx context.Context, s polyloop.Store, run string) (polyloop.RunResult, error) {
	l, err := polyloop.ReadLog(ctx, s, run)
	if err != nil {
		return polyloop.RunResult{}, err
	}
	r := w.Runner(s)
	if l.Empty() {
		return r.Run(ctx, run, w.Agent(), w.Task())
	}
	return r.Resume(ctx, run, w.Agent())
}

// check accepts what a run of the workload may end with: W's completion,
// or, with a never-replay tool, resume_state_unknown.
func (w crashWorkload) check(res polyloop.RunResult) error {
	if w.policy == polyloop.NeverReplay && res.StopReason == polyloop.StopResumeStateUnknown {
		return nil
	}
	return w.Check(res)
}

// crashChild is the child's body: open the store, arm the kill point, say
// "ready", run (reporting each Append), say "done".
func crashChild(h CrashHarness, loc string) {
	kp, err := ParseKillPoint(os.Getenv(envCrashKill))
	if err != nil {
		childFail("kill point", err)
	}
	seed, _ := strconv.ParseUint(os.Getenv(envCrashSeed), 10, 64)
	s, err := h.Open(loc)
	if err != nil {
		childFail("open", err)
	}
	as, ex := &AckStore{Store: s}, &crashExec{journal: os.Getenv(envCrashJournal)}
	arm(kp, h, s, as, ex, seed)
	fmt.Println("ready")
	w := newCrashWorkload(ex, polyloop.ReplayPolicy(os.Getenv(envCrashPolicy)))
	res, err := w.runOrResume(context.Background(), as, os.Getenv(envCrashRun))
	if err == nil {
		err = w.check(res)
	}
	if errors.Is(err, polyloop.ErrSeqConflict) {
		// Another writer appended first: the sequence rule fenced this one.
		fmt.Println("fenced")
		fmt.Fprintln(os.Stderr, "child: fenced:", err)
		os.Exit(exitFenced)
	}
	if err != nil {
		childFail("run", err)
	}
	fmt.Println("done")
	if c, ok := s.(io.Closer); ok {
		c.Close()
	}
	os.Exit(0)
}

// arm sets the child up to die at kp.
func arm(kp KillPoint, h CrashHarness, s polyloop.Store, as *AckStore, ex *crashExec, seed uint64) {
	at := func(k int) {
		if k == kp.N {
			Die()
		}
	}
	switch kp.Kind {
	case KillBeforeAppend:
		as.Before = at
	case KillAfterAppend:
		as.After = at
	case KillInFlight:
		var inside atomic.Bool
		as.Before = func(k int) { inside.Store(k == kp.N) }
		h.InFlight(s, func() {
			if inside.Load() {
				Die()
			}
		})
	case KillInAction:
		ex.dieAt = kp.N
	case KillTimed:
		ex.rng, ex.max = rand.New(rand.NewPCG(seed, 1)), 3*time.Millisecond
	}
}

// exitFenced is the exit status of a child whose Append lost to another
// writer (polyloop.ErrSeqConflict).
const exitFenced = 5

func childFail(what string, err error) {
	fmt.Fprintf(os.Stderr, "child: %s: %v\n", what, err)
	os.Exit(3)
}
