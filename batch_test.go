package polyloop_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
)

// batchTurn is a reply with one tool call per tool, each with its own
// arguments, so that every action of the batch is told apart in the ledger.
func batchTurn(step int, tools ...string) scriptmodel.Turn {
	var calls []polyloop.ToolCall
	for i, tool := range tools {
		key := "to"
		if tool == "echo" {
			key = "text"
		}
		calls = append(calls, polyloop.ToolCall{ID: fmt.Sprintf("c%d_%d", step, i), Name: tool,
			Args: []byte(fmt.Sprintf(`{%q:"s%d-%d"}`, key, step, i))})
	}
	return scriptmodel.Turn{ToolCalls: calls}
}

// batchScript: one action, a batch of the given tools, one more action, a
// final answer.
func batchScript(tools ...string) func() *scriptmodel.Client {
	return func() *scriptmodel.Client {
		return scriptmodel.New(
			call(1, "echo", map[string]string{"text": "first"}),
			batchTurn(2, tools...),
			call(3, "echo", map[string]string{"text": "third"}),
			scriptmodel.Reply("the answer"),
		)
	}
}

func batchAgent(parallel bool) polyloop.Agent {
	a := testAgent()
	a.ParallelActions = parallel
	return a
}

func repeat(tool string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = tool
	}
	return out
}

type batchCase struct {
	name     string
	tools    []string
	parallel bool
}

func batchCases(tools func(n int) []string) []batchCase {
	var cases []batchCase
	for _, n := range []int{1, 2, 5} {
		for _, parallel := range []bool{false, true} {
			mode := "sequential"
			if parallel {
				mode = "parallel"
			}
			cases = append(cases, batchCase{fmt.Sprintf("%d-%s", n, mode), tools(n), parallel})
		}
	}
	return cases
}

// The equivalence property (SPEC §7.2) with batches of 1, 2 and 5 replay-safe
// actions, run one after another or in parallel: a crash after any number of
// records — between two actions of a batch, inside one, and again during
// the resume — then resumes end with the records of the uninterrupted run.
func TestBatchEquivalenceAfterCrash(t *testing.T) {
	ctx := context.Background()
	for _, bc := range batchCases(func(n int) []string { return repeat("echo", n) }) {
		t.Run(bc.name, func(t *testing.T) {
			script, agent := batchScript(bc.tools...), batchAgent(bc.parallel)
			ref := memstore.New()
			if _, err := newRunner(script(), ref, newTestExec()).Run(ctx, "b", agent, polyloop.Task{Input: "t"}); err != nil {
				t.Fatal(err)
			}
			want, _ := polyloop.ReadLog(ctx, ref, "b")
			for k := 1; k < len(want.Records); k++ {
				for _, again := range []int{0, 1, 2} {
					store := memstore.NewWithOptions(memstore.Options{CrashAfter: k})
					exec := newTestExec()
					if _, err := newRunner(script(), store, exec).Run(ctx, "b", agent, polyloop.Task{Input: "t"}); !errors.Is(err, memstore.ErrCrashed) {
						t.Fatalf("k=%d: Run err = %v, want the simulated crash", k, err)
					}
					settledBefore := settledKeys(t, store, "b")
					before := exec.snapshot()
					for resumes := 0; ; resumes++ {
						faults := memstore.Options{}
						if again > 0 && resumes == 0 {
							faults.CrashAfter = store.Len() + again
						}
						store.SetFaults(faults)
						_, err := continueRun(newRunner(script(), store, exec), store, "b", agent, "t")
						if errors.Is(err, memstore.ErrCrashed) && resumes < 5 {
							continue
						}
						if err != nil {
							t.Fatalf("k=%d again=%d: %v", k, again, err)
						}
						break
					}
					got, _ := polyloop.ReadLog(ctx, store, "b")
					sameLog(t, fmt.Sprintf("crash after %d records, again after %d", k, again), got, want)
					// An action whose outcome was in the log is never run again.
					for key := range settledBefore {
						if exec.count(key) != before[key] {
							t.Fatalf("k=%d: %s ran again after its outcome was recorded (%d → %d)", k, key, before[key], exec.count(key))
						}
					}
				}
			}
		})
	}
}

// settledKeys returns the ledger keys ("tool:args") of the actions whose
// outcome is in the run's log.
func settledKeys(t *testing.T, store polyloop.Store, runID string) map[string]bool {
	t.Helper()
	log, err := polyloop.ReadLog(context.Background(), store, runID)
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]string{} // action id of the open step → key
	out := map[string]bool{}
	settle := func(id string) {
		if key, ok := actions[id]; ok {
			out[key] = true
		}
	}
	for _, r := range log.Records {
		switch b := r.Body.(type) {
		case *polyloop.ActionIntent:
			actions[b.ActionID] = b.Action.Tool + ":" + string(b.Action.Args)
		case *polyloop.ActionResult:
			settle(b.ResultID)
		case *polyloop.StepCompleted:
			settle(b.ResultID)
			actions = map[string]string{}
		}
	}
	return out
}

func (e *testExec) snapshot() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]int, len(e.ledger))
	for k, n := range e.ledger {
		out[k] = n
	}
	return out
}

// With never_replay and replay_safe tools mixed in one batch, no
// never_replay action is ever executed twice, whatever the crash point; an
// action of unknown outcome among them finishes the run with
// resume_state_unknown, and every action left unknown is counted.
func TestBatchNeverReplayLedger(t *testing.T) {
	ctx := context.Background()
	mixed := func(n int) []string {
		tools := []string{"echo", "send", "echo", "send", "echo"}
		return tools[:n]
	}
	for _, bc := range batchCases(mixed) {
		t.Run(bc.name, func(t *testing.T) {
			script, agent := batchScript(bc.tools...), batchAgent(bc.parallel)
			full := memstore.New()
			if _, err := newRunner(script(), full, newTestExec()).Run(ctx, "b", agent, polyloop.Task{Input: "t"}); err != nil {
				t.Fatal(err)
			}
			unknown := 0
			for k := 1; k < full.Len(); k++ {
				store := memstore.NewWithOptions(memstore.Options{CrashAfter: k})
				exec := newTestExec()
				if _, err := newRunner(script(), store, exec).Run(ctx, "b", agent, polyloop.Task{Input: "t"}); !errors.Is(err, memstore.ErrCrashed) {
					t.Fatalf("k=%d: %v", k, err)
				}
				store.SetFaults(memstore.Options{})
				res, err := continueRun(newRunner(script(), store, exec), store, "b", agent, "t")
				if err != nil {
					t.Fatalf("k=%d: %v", k, err)
				}
				for key, n := range exec.ledgerFor("send") {
					if n > 1 {
						t.Fatalf("k=%d: never-replay %s executed %d times", k, key, n)
					}
				}
				log, _ := polyloop.ReadLog(ctx, store, "b")
				switch res.StopReason {
				case polyloop.StopResumeStateUnknown:
					unknown++
					if open := openActions(log); res.Totals.UnknownActions != open || open == 0 {
						t.Fatalf("k=%d: %d unknown actions counted, %d open in the log", k, res.Totals.UnknownActions, open)
					}
				case polyloop.StopCompleted:
				default:
					t.Fatalf("k=%d: stop %s", k, res.StopReason)
				}
			}
			if unknown == 0 && strings.Contains(strings.Join(bc.tools, ","), "send") {
				t.Fatal("no crash point fell inside a never_replay action; the test proves nothing")
			}
		})
	}
}

// openActions counts the action intents of a log with no outcome and no
// later attempt: the actions left of unknown outcome.
func openActions(log polyloop.RunLog) int {
	open := map[string]bool{}
	for _, r := range log.Records {
		switch b := r.Body.(type) {
		case *polyloop.ActionIntent:
			open[fmt.Sprintf("%d/%s", b.Step, b.ActionID)] = true
		case *polyloop.ActionResult:
			delete(open, fmt.Sprintf("%d/%s", b.Step, b.ResultID))
		case *polyloop.StepCompleted:
			delete(open, fmt.Sprintf("%d/%s", b.Step, b.ResultID))
		}
	}
	return len(open)
}

// A cancellation that arrives just after any seam call of a run with batches
// loses nothing that happened: resumed, the run ends with the records of the
// uninterrupted run, and every action ran exactly once.
func TestBatchCancellationKeepsFacts(t *testing.T) {
	ctx := context.Background()
	for _, bc := range batchCases(func(n int) []string { return repeat("echo", n) }) {
		t.Run(bc.name, func(t *testing.T) {
			script, agent := batchScript(bc.tools...), batchAgent(bc.parallel)
			ref := memstore.New()
			if _, err := newRunner(script(), ref, newTestExec()).Run(ctx, "b", agent, polyloop.Task{Input: "t"}); err != nil {
				t.Fatal(err)
			}
			want, _ := polyloop.ReadLog(ctx, ref, "b")
			tot := polyloop.ComputeTotals(want)
			for k := int32(1); k <= int32(tot.ModelCalls+tot.Actions); k++ {
				store, exec := memstore.New(), newTestExec()
				cctx, cancel := context.WithCancel(ctx)
				c := &cancelAt{k: k, cancel: cancel}
				_, err := newRunner(cancelModel{c, script()}, store, cancelExec{c, exec}).Run(cctx, "b", agent, polyloop.Task{Input: "t"})
				cancel()
				// A cancellation that lands while a parallel batch's record is
				// being appended may fail that Append with the cancellation
				// (Store contract): then the Runner reports both, and that
				// append's outcome is unknown (Run's doc comment, §7.4): the
				// outcomes it held are not facts of the log, and resume
				// replays their replay_safe actions. Only that store failure
				// is allowed.
				var pe *polyloop.PersistenceError
				if err != nil && (!errors.Is(err, context.Canceled) || errors.As(err, &pe) && !errors.Is(pe.Err, context.Canceled)) {
					t.Fatalf("k=%d: Run: %v", k, err)
				}
				appendUnknown := pe != nil
				if err != nil {
					if _, err := continueRun(newRunner(script(), store, exec), store, "b", agent, "t"); err != nil {
						t.Fatalf("k=%d: resume: %v", k, err)
					}
				}
				got, _ := polyloop.ReadLog(ctx, store, "b")
				sameLog(t, fmt.Sprintf("cancel after seam call %d", k), got, want)
				for key, n := range exec.ledgerFor("echo") {
					if n != 1 && !(appendUnknown && n == 2) {
						t.Fatalf("k=%d: %s executed %d times, want once (twice at most after an append of unknown outcome: echo is replay_safe)", k, key, n)
					}
				}
			}
		})
	}
}

// barrierExec runs each action only once all n actions of the batch have
// started, and checks that every intent of the batch was durable before the
// first of them started.
type barrierExec struct {
	n       int
	store   polyloop.Store
	mu      sync.Mutex
	started int
	all     chan struct{}
	intents []int // action intents in the log when each action started
}

func (e *barrierExec) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	log, err := polyloop.ReadLog(ctx, e.store, "p")
	if err != nil {
		return polyloop.ActionOutcome{}, err
	}
	e.mu.Lock()
	e.intents = append(e.intents, len(log.ActionIntents()))
	e.started++
	if e.started == e.n {
		close(e.all)
	}
	e.mu.Unlock()
	select {
	case <-e.all:
	case <-ctx.Done():
		return polyloop.ActionOutcome{}, ctx.Err()
	}
	return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "ran " + string(a.Args)}, nil
}

// With ParallelActions, the actions of a batch run at once (each waits for
// all the others to have started) and every intent is durable before any
// starts; the history keeps the batch's order.
func TestParallelActionsRunConcurrently(t *testing.T) {
	const n = 4
	store := memstore.New()
	exec := &barrierExec{n: n, store: store, all: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a sequential run would wait here forever
	defer cancel()
	model := scriptmodel.New(batchTurn(1, repeat("echo", n)...), scriptmodel.Reply("done"))
	res, err := newRunner(model, store, exec).Run(ctx, "p", batchAgent(true), polyloop.Task{Input: "t"})
	if err != nil {
		t.Fatalf("Run: %v (the actions did not all run at once)", err)
	}
	if res.StopReason != polyloop.StopCompleted || res.Totals.Actions != n {
		t.Fatalf("result %+v", res)
	}
	for i, k := range exec.intents {
		if k != n {
			t.Fatalf("action %d started with %d of the %d intents durable", i, k, n)
		}
	}
	log, _ := polyloop.ReadLog(ctx, store, "p")
	var tools []string
	for _, m := range polyloop.History(log) {
		if m.Role == polyloop.RoleTool {
			tools = append(tools, m.ToolCallID+"="+m.Content)
		}
	}
	want := `c1_0=ran {"text":"s1-0"} c1_1=ran {"text":"s1-1"} c1_2=ran {"text":"s1-2"} c1_3=ran {"text":"s1-3"}`
	if got := strings.Join(tools, " "); got != want {
		t.Fatalf("tool results in the history:\n got  %s\n want %s", got, want)
	}
}

// In a parallel batch, an executor error of one action propagates only
// after the other actions returned and their outcomes were recorded; the
// failed action is left of unknown outcome, planned by its own policy.
func TestParallelActionErrorKeepsSiblings(t *testing.T) {
	store, exec := memstore.New(), newTestExec()
	model := scriptmodel.New(scriptmodel.Turn{ToolCalls: []polyloop.ToolCall{
		{ID: "a", Name: "echo", Args: []byte(`{"text":"x"}`)},
		{ID: "b", Name: "fail", Args: []byte(`{}`)},
		{ID: "c", Name: "echo", Args: []byte(`{"text":"y"}`)},
	}}, scriptmodel.Reply("done"))
	_, err := newRunner(model, store, exec).Run(context.Background(), "r", batchAgent(true), polyloop.Task{Input: "t"})
	if !errors.Is(err, errFail) {
		t.Fatalf("err = %v, want the executor's error", err)
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "r")
	if n := len(log.ActionResults()); n != 2 {
		t.Fatalf("%d outcomes recorded, want the two siblings'", n)
	}
	plan, err := polyloop.PlanResume(log)
	if err != nil || plan.Action != polyloop.PlanReplayAction || plan.ActionID != "a1.2" {
		t.Fatalf("plan %+v, %v; want a replay of a1.2 (fail is replay_safe)", plan, err)
	}
}

// A panic in one action of a parallel batch reaches the caller's goroutine
// once the siblings' outcomes are recorded.
func TestParallelActionPanicReachesCaller(t *testing.T) {
	store, exec := memstore.New(), newTestExec()
	model := scriptmodel.New(scriptmodel.Turn{ToolCalls: []polyloop.ToolCall{
		{ID: "a", Name: "echo", Args: []byte(`{"text":"x"}`)},
		{ID: "b", Name: "panic", Args: []byte(`{}`)},
	}}, scriptmodel.Reply("done"))
	defer func() {
		if p := recover(); p == nil {
			t.Fatal("the panic did not reach the caller")
		}
		log, _ := polyloop.ReadLog(context.Background(), store, "r")
		if n := len(log.ActionResults()); n != 1 {
			t.Fatalf("%d outcomes recorded, want the sibling's", n)
		}
	}()
	_, _ = newRunner(model, store, exec).Run(context.Background(), "r", batchAgent(true), polyloop.Task{Input: "t"})
}

// Children started by two actions of one batch get distinct run ids.
func TestBatchChildrenDistinct(t *testing.T) {
	ref := polyloop.ParentRef{RunID: "p", Step: 3, Index: 1}
	second := ref
	second.Action = 1
	if a, b := polyloop.ChildRunID(ref), polyloop.ChildRunID(second); a == b || a != "p/3.1" || b != "p/3-1.1" {
		t.Fatalf("child ids %q and %q", a, b)
	}
}

// Each action of a batch of 2 or 5 invokes a child: the children get distinct
// run ids, and after a crash at any record — the parent's or a child's —
// the resumed parent meets each child again: a handler whose reception is
// recorded never runs again (one that returned just before its reception
// could be written runs again: design 0004), in order or in parallel.
func TestBatchChildrenSurviveCrashes(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		width    int
		parallel bool
	}{{2, false}, {2, true}, {5, false}, {5, true}} {
		width, parallel := c.width, c.parallel
		t.Run(fmt.Sprintf("width=%d/parallel=%v", width, parallel), func(t *testing.T) {
			tools := slices.Repeat([]string{"delegate"}, width)
			var handled sync.Map // child run id → handler runs
			run := func(store *memstore.Store, childModel func() *scriptmodel.Client) (polyloop.RunResult, error) {
				child := &polyloop.Runner{Model: childModel(), Parser: testParser{}, Executor: newTestExec(), Store: store}
				exec := &delegateExec{env: newTestExec()}
				exec.invoke = func(ctx context.Context) (string, error) {
					return polyloop.InvokeChild(ctx, polyloop.Child{Runner: child, Agent: childAgent()}, polyloop.Task{Input: "q"},
						polyloop.Receive[string]{Succeeded: func(r polyloop.RunResult) (string, error) {
							n, _ := handled.LoadOrStore(r.RunID, new(atomic.Int32))
							n.(*atomic.Int32).Add(1)
							return "child " + r.RunID + " says " + r.FinalAnswer, nil
						}})
				}
				parent := &polyloop.Runner{Model: scriptmodel.New(batchTurn(1, tools...), scriptmodel.Reply("done")),
					Parser: testParser{}, Executor: exec, Store: store}
				agent := parentAgent()
				agent.ParallelActions = parallel
				return continueRun(parent, store, "p", agent, "t")
			}
			childModel := func() *scriptmodel.Client { return scriptmodel.New(scriptmodel.Reply("42")) }
			full := memstore.New()
			if res, err := run(full, childModel); err != nil || res.StopReason != polyloop.StopCompleted {
				t.Fatalf("uninterrupted: %+v, %v", res, err)
			}
			ids := map[string]bool{}
			sums, _ := full.ListRuns(ctx, polyloop.RunFilter{})
			for _, s := range sums {
				ids[s.RunID] = true
			}
			for a := range width {
				if id := polyloop.ChildRunID(polyloop.ParentRef{RunID: "p", Step: 1, Action: a, Index: 1}); !ids[id] {
					t.Fatalf("runs %v: no child %s", ids, id)
				}
			}
			if len(ids) != width+1 {
				t.Fatalf("runs %v, want the parent and %d children", ids, width)
			}
			total := full.Len()
			for k := 1; k < total; k++ {
				handled = sync.Map{}
				store := memstore.NewWithOptions(memstore.Options{CrashAfter: k})
				_, err := run(store, childModel)
				if err == nil {
					t.Fatalf("k=%d: no crash", k)
				}
				store.SetFaults(memstore.Options{})
				before, _ := polyloop.ReadLog(ctx, store, "p")
				handled = sync.Map{}
				res, err := run(store, childModel)
				if err != nil || res.StopReason != polyloop.StopCompleted {
					t.Fatalf("k=%d: resumed %+v, %v", k, res, err)
				}
				for _, rec := range before.Receptions() {
					if n, ok := handled.Load(rec.ChildRunID); ok && n.(*atomic.Int32).Load() > 0 {
						t.Fatalf("k=%d: the handler for %s ran again after its reception was recorded", k, rec.ChildRunID)
					}
				}
				log, _ := polyloop.ReadLog(ctx, store, "p")
				if n := len(log.Receptions()); n != width {
					t.Fatalf("k=%d: %d receptions in the parent's log, want %d", k, n, width)
				}
			}
		})
	}
}

// In a serial batch of 2 or 5, an executor error or a panic at any position
// propagates at once: the outcomes before it are recorded, the action is
// left of unknown outcome (planned by its policy: fail is replay_safe), and
// no later action of the batch starts.
func TestSerialBatchFailureMidway(t *testing.T) {
	for _, n := range []int{2, 5} {
		for k := range n {
			for _, tool := range []string{"fail", "panic"} {
				t.Run(fmt.Sprintf("%s at %d of %d", tool, k+1, n), func(t *testing.T) {
					calls := make([]polyloop.ToolCall, n)
					for i := range calls {
						calls[i] = polyloop.ToolCall{ID: fmt.Sprintf("c%d", i), Name: "echo", Args: []byte(fmt.Sprintf(`{"text":"t%d"}`, i))}
					}
					calls[k] = polyloop.ToolCall{ID: fmt.Sprintf("c%d", k), Name: tool, Args: []byte(`{}`)}
					store, exec := memstore.New(), newTestExec()
					model := scriptmodel.New(scriptmodel.Turn{ToolCalls: calls}, scriptmodel.Reply("done"))
					func() {
						defer func() {
							p := recover()
							if (tool == "panic") != (p != nil) {
								t.Fatalf("recovered %v", p)
							}
						}()
						_, err := newRunner(model, store, exec).Run(context.Background(), "r", batchAgent(false), polyloop.Task{Input: "t"})
						if tool == "fail" && !errors.Is(err, errFail) {
							t.Fatalf("err = %v, want the executor's error", err)
						}
					}()
					log, _ := polyloop.ReadLog(context.Background(), store, "r")
					log.RunID = "r"
					if got := len(log.ActionResults()); got != k {
						t.Fatalf("%d outcomes recorded, want the %d before it", got, k)
					}
					if got := len(log.ActionIntents()); got != k+1 {
						t.Fatalf("%d intents, want %d: nothing after the failed action starts", got, k+1)
					}
					if exec.count(fmt.Sprintf(`echo:{"text":"t%d"}`, n-1)) != 0 && k < n-1 {
						t.Fatalf("ledger %v: an action after the failure ran", exec.snapshot())
					}
					plan, err := polyloop.PlanResume(log)
					id := fmt.Sprintf("a1.%d", k+1)
					if tool == "fail" && (err != nil || plan.Action != polyloop.PlanReplayAction || plan.ActionID != id) {
						t.Fatalf("plan %+v, %v; want a replay of %s", plan, err, id)
					}
					if tool == "panic" && (err != nil || plan.ActionID != id) {
						t.Fatalf("plan %+v, %v; want %s of unknown outcome", plan, err, id)
					}
				})
			}
		}
	}
}
