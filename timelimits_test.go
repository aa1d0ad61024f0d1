package polyloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
)

// testClock is a Runner clock that moves only when told to.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func newTestClock() *testClock {
	return &testClock{t: time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)}
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// slowModel is a script whose every call takes d on the test clock.
type slowModel struct {
	*scriptmodel.Client
	c *testClock
	d time.Duration
}

func (m slowModel) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	m.c.advance(m.d)
	return m.Client.Complete(ctx, req)
}

// slowExec is testExec whose every action takes d on the test clock.
type slowExec struct {
	*testExec
	c *testClock
	d time.Duration
}

func (e slowExec) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	e.c.advance(e.d)
	return e.testExec.Execute(ctx, a)
}

// timedRunner runs echo steps of a model call of 10 minutes and an action
// of 5 minutes, on clock c.
func timedRunner(c *testClock, store polyloop.Store) *polyloop.Runner {
	var turns []scriptmodel.Turn
	for i := 1; i <= 20; i++ {
		turns = append(turns, call(i, "echo", map[string]string{"text": fmt.Sprint(i)}))
	}
	r := newRunner(slowModel{scriptmodel.New(turns...), c, 10 * time.Minute}, store, slowExec{newTestExec(), c, 5 * time.Minute})
	r.Clock = c.now
	return r
}

func timedAgent(l polyloop.Limits) polyloop.Agent {
	a := testAgent()
	a.Limits.TimeLimit, a.Limits.WorkingLimit = l.TimeLimit, l.WorkingLimit
	return a
}

// Each limit stops a run with its own stop reason, checked before each
// step: 15 minutes a step, so the run stops after the step that reaches it.
func TestTimeLimitsStopRun(t *testing.T) {
	for _, tc := range []struct {
		limits polyloop.Limits
		want   polyloop.StopReason
		steps  int
	}{
		{polyloop.Limits{TimeLimit: 40 * time.Minute}, polyloop.StopTimeLimit, 3},
		{polyloop.Limits{WorkingLimit: 30 * time.Minute}, polyloop.StopWorkingLimit, 2},
		{polyloop.Limits{TimeLimit: time.Hour, WorkingLimit: 2 * time.Hour}, polyloop.StopTimeLimit, 4},
	} {
		t.Run(string(tc.want), func(t *testing.T) {
			store, c := memstore.New(), newTestClock()
			res, err := timedRunner(c, store).Run(context.Background(), "r", timedAgent(tc.limits), polyloop.Task{Input: "t"})
			if err != nil {
				t.Fatal(err)
			}
			if res.StopReason != tc.want || res.Totals.Steps != tc.steps {
				t.Fatalf("stop %s after %d steps, want %s after %d", res.StopReason, res.Totals.Steps, tc.want, tc.steps)
			}
			log, _ := polyloop.ReadLog(context.Background(), store, "r")
			fin := log.Records[len(log.Records)-1].Body.(*polyloop.RunFinished)
			if fin.StopReason != tc.want {
				t.Fatalf("run_finished says %s, want %s", fin.StopReason, tc.want)
			}
			if snap := log.Started().Snapshot.Limits; snap.TimeLimit != tc.limits.TimeLimit || snap.WorkingLimit != tc.limits.WorkingLimit {
				t.Fatalf("snapshot limits %+v, want %+v", snap, tc.limits)
			}
		})
	}
}

// A resumed run's limits count its whole log: the wall clock from the
// run_started written before the crash; the working time from the calls
// and actions recorded before it, without the time the run was down (the
// call cut by the crash counts nothing).
//
// The run crashes when step 3's model result is written (after 30 minutes
// of working time, 40 of wall clock), and is resumed 3 hours later.
//   - time_limit 2h: reached at once; the step under way ends first: 3 steps.
//     Counting from the resume, it would go on for 8 steps more.
//   - working_limit 50m: 30m before the crash, then step 3 (45m) and step 4
//     (60m): 4 steps. Counting from the resume it would stop after step 6;
//     counting the 3 hours down, after step 3.
func TestTimeLimitsCountWholeLogOnResume(t *testing.T) {
	for _, tc := range []struct {
		limits polyloop.Limits
		want   polyloop.StopReason
		steps  int
	}{
		{polyloop.Limits{TimeLimit: 2 * time.Hour}, polyloop.StopTimeLimit, 3},
		{polyloop.Limits{WorkingLimit: 50 * time.Minute}, polyloop.StopWorkingLimit, 4},
	} {
		t.Run(string(tc.want), func(t *testing.T) {
			ctx := context.Background()
			store, c := memstore.NewWithOptions(memstore.Options{CrashAfter: 10}), newTestClock()
			agent := timedAgent(tc.limits)
			if _, err := timedRunner(c, store).Run(ctx, "r", agent, polyloop.Task{Input: "t"}); !errors.Is(err, memstore.ErrCrashed) {
				t.Fatalf("Run: %v, want the simulated crash", err)
			}
			c.advance(3 * time.Hour)
			store.SetFaults(memstore.Options{})
			res, err := timedRunner(c, store).Resume(ctx, "r", agent)
			if err != nil {
				t.Fatal(err)
			}
			if res.StopReason != tc.want || res.Totals.Steps != tc.steps {
				t.Fatalf("stop %s after %d steps, want %s after %d", res.StopReason, res.Totals.Steps, tc.want, tc.steps)
			}
			if res.Totals.UnknownModelCalls != 1 {
				t.Fatalf("unknown model calls %d, want the one cut by the crash", res.Totals.UnknownModelCalls)
			}
		})
	}
}

// Negative limits are refused like the others.
func TestTimeLimitsNegativeRefused(t *testing.T) {
	c := newTestClock()
	_, err := timedRunner(c, memstore.New()).Run(context.Background(), "r", timedAgent(polyloop.Limits{WorkingLimit: -time.Second}), polyloop.Task{Input: "t"})
	if !errors.Is(err, polyloop.ErrInvalidConfig) {
		t.Fatalf("Run: %v, want ErrInvalidConfig", err)
	}
}

// appendTimes is a Store that keeps rows' bytes and checks that the
// records of each Append share one time: a log's readers find its writes
// by them (ObserveLog), also when the machine stamps the records of a run
// with a time limit.
type appendTimes struct {
	inner polyloop.Store
	t     *testing.T
	prev  string
}

func (s *appendTimes) Append(ctx context.Context, runID string, rows []polyloop.Row) error {
	at := ""
	for _, row := range rows {
		var rec struct{ At string }
		if err := json.Unmarshal(row.Data, &rec); err != nil {
			s.t.Errorf("row %d: %v", row.Seq, err)
		}
		switch {
		case at == "":
			at = rec.At
			if at == s.prev {
				s.t.Errorf("the write beginning at record %d has the time of the write before it (%s)", row.Seq, at)
			}
		case rec.At != at:
			s.t.Errorf("record %d (%s) at %s in a write at %s", row.Seq, row.Kind, rec.At, at)
		}
	}
	s.prev = at
	return s.inner.Append(ctx, runID, rows)
}

func (s *appendTimes) ReadRows(ctx context.Context, runID string) ([]polyloop.Row, error) {
	return s.inner.ReadRows(ctx, runID)
}

func (s *appendTimes) ReadRowsFrom(ctx context.Context, runID string, from int64, limit int) ([]polyloop.Row, error) {
	return s.inner.ReadRowsFrom(ctx, runID, from, limit)
}

// Under a time limit the machine stamps the records with the times the
// limits are computed from; the records of one write still share one time,
// with a clock that moves at every read, through a crash and a resume of
// the reference run (a parallel batch, a refusal, an invalid reply).
func TestTimeLimitsKeepOneTimePerWrite(t *testing.T) {
	ctx := context.Background()
	mem := memstore.NewWithOptions(memstore.Options{CrashAfter: 9})
	store := &appendTimes{inner: mem, t: t}
	agent := equivalenceAgent()
	agent.Limits.TimeLimit, agent.Limits.WorkingLimit = 24*time.Hour, 24*time.Hour
	clock := fixedClock()
	r := newRunner(referenceScript(), store, newTestExec())
	r.Clock = clock
	if _, err := r.Run(ctx, "ref", agent, polyloop.Task{Input: "reference task"}); !errors.Is(err, memstore.ErrCrashed) {
		t.Fatalf("Run: %v, want the simulated crash", err)
	}
	mem.SetFaults(memstore.Options{})
	store.prev = ""
	r = newRunner(referenceScript(), store, newTestExec())
	r.Clock = clock
	res, err := r.Resume(ctx, "ref", agent)
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("Resume: %+v, %v", res, err)
	}
	log, _ := polyloop.ReadLog(ctx, mem, "ref")
	var invocations []int64
	obs := &invocationObserver{seen: &invocations}
	if err := polyloop.ObserveLog(log, obs); err != nil {
		t.Fatal(err)
	}
	if len(invocations) != 2 || invocations[0] != 0 {
		t.Fatalf("invocations begin at records %v, want the run's start and its resume", invocations)
	}
}

// invocationObserver notes the records that begin an invocation.
type invocationObserver struct{ seen *[]int64 }

func (o *invocationObserver) Record(f polyloop.Fact, _ polyloop.Record) {
	if f.Invocation != "" {
		*o.seen = append(*o.seen, f.Seq)
	}
}
func (*invocationObserver) RunStarted(polyloop.Fact, *polyloop.RunStarted)           {}
func (*invocationObserver) ModelCall(polyloop.Fact, *polyloop.ModelCallIntent)       {}
func (*invocationObserver) ModelResult(polyloop.Fact, *polyloop.ModelCallResult)     {}
func (*invocationObserver) StepCompleted(polyloop.Fact, *polyloop.StepCompleted)     {}
func (*invocationObserver) ApprovalDecided(polyloop.Fact, *polyloop.ApprovalDecided) {}
func (*invocationObserver) DeliveryReceived(polyloop.Fact, *polyloop.DeliveryReceived) {
}
func (*invocationObserver) ChildReceived(polyloop.Fact, *polyloop.ChildReception)    {}
func (*invocationObserver) MaintenanceOp(polyloop.Fact, *polyloop.MaintenanceOp)     {}
func (*invocationObserver) MaintenanceDone(polyloop.Fact, *polyloop.MaintenanceDone) {}
func (*invocationObserver) LeaseTakenOver(polyloop.Fact, *polyloop.LeaseTakeover)    {}
func (*invocationObserver) RunFinished(polyloop.Fact, *polyloop.RunFinished)         {}
func (*invocationObserver) ActionReconciled(polyloop.Fact, *polyloop.ActionReconciled) {
}
func (*invocationObserver) ActionStarted(polyloop.Fact, *polyloop.ActionIntent, *polyloop.ActionIntent) {
}
func (*invocationObserver) ActionSettled(polyloop.Fact, *polyloop.SettledAction, *polyloop.ActionIntent, *polyloop.GateRequest) {
}
func (*invocationObserver) GateRequested(polyloop.Fact, polyloop.RecordKind, *polyloop.GateRequest) {
}
func (*invocationObserver) ConfigOverridden(polyloop.Fact, *polyloop.ConfigOverride, polyloop.Snapshot) {
}

// A wait for an approval counts in the wall clock, never in the working
// time: step 1's action waits 5 hours for its approval. Each step works 15
// minutes (a call of 10, an action of 5).
//   - working_limit 40m: steps 1 (15m), 2 (30m), 3 (45m): 3 steps.
//     Counting the wait, it would stop after step 1.
//   - time_limit 2h: reached during the wait; step 1 ends, then the run
//     stops: 1 step.
func TestTimeLimitsAndApprovalWaits(t *testing.T) {
	for _, tc := range []struct {
		limits polyloop.Limits
		want   polyloop.StopReason
		steps  int
	}{
		{polyloop.Limits{WorkingLimit: 40 * time.Minute}, polyloop.StopWorkingLimit, 3},
		{polyloop.Limits{TimeLimit: 2 * time.Hour}, polyloop.StopTimeLimit, 1},
	} {
		t.Run(string(tc.want), func(t *testing.T) {
			ctx := context.Background()
			store, c := memstore.New(), newTestClock()
			agent := timedAgent(tc.limits)
			for i := range agent.Tools {
				if agent.Tools[i].Name == "send" {
					agent.Tools[i].Approval = polyloop.ApprovalRequired
				}
			}
			turns := []scriptmodel.Turn{call(1, "send", map[string]string{"to": "ana"})}
			for i := 2; i <= 10; i++ {
				turns = append(turns, call(i, "echo", map[string]string{"text": fmt.Sprint(i)}))
			}
			runner := func() *polyloop.Runner {
				r := newRunner(slowModel{scriptmodel.New(turns...), c, 10 * time.Minute}, store, slowExec{newTestExec(), c, 5 * time.Minute})
				r.Clock = c.now
				return r
			}
			res, err := runner().Run(ctx, "g", agent, polyloop.Task{Input: "t"})
			if err != nil || res.Suspended == nil {
				t.Fatalf("Run: %+v, %v; want suspended", res, err)
			}
			c.advance(5 * time.Hour)
			if err := runner().Approve(ctx, "g", "a1", polyloop.ApprovalDecision{Allow: true, By: "ana"}); err != nil {
				t.Fatal(err)
			}
			res, err = runner().Resume(ctx, "g", agent)
			if err != nil {
				t.Fatal(err)
			}
			if res.StopReason != tc.want || res.Totals.Steps != tc.steps {
				t.Fatalf("stop %s after %d steps, want %s after %d", res.StopReason, res.Totals.Steps, tc.want, tc.steps)
			}
		})
	}
}
