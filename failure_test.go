package polyloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
)

func newRunner(model polyloop.ModelClient, store polyloop.Store, exec polyloop.ActionExecutor) *polyloop.Runner {
	return &polyloop.Runner{Model: model, Parser: testParser{}, Executor: exec, Store: store}
}

// SPEC §3.3, §7.1: an executor error is outside the protocol. It propagates
// unchanged, no step record and no finish record are written, and resume
// reads the log as "state unknown", deciding by the tool's replay policy.
func TestExecutorErrorPropagates(t *testing.T) {
	for _, tc := range []struct {
		tool string
		plan polyloop.PlanAction
	}{
		{"fail", polyloop.PlanReplayAction},
		{"failnever", polyloop.PlanReconcile},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			store := memstore.New()
			exec := newTestExec()
			model := scriptmodel.New(call(1, "echo", map[string]string{"text": "hi"}), call(2, tc.tool, nil), scriptmodel.Reply("never"))
			// "failnever" is a never-replay tool that the executor does not know
			// as "fail": route it to the failing branch.
			var ex polyloop.ActionExecutor = exec
			if tc.tool == "failnever" {
				ex = renameExec{exec, "failnever", "fail"}
			}
			_, err := newRunner(model, store, ex).Run(context.Background(), "r1", testAgent(), polyloop.Task{Input: "go"})
			if !errors.Is(err, errFail) {
				t.Fatalf("Run error = %v, want errors.Is errFail", err)
			}
			var pe *polyloop.PersistenceError
			if errors.As(err, &pe) {
				t.Fatalf("executor error was turned into a PersistenceError: %v", err)
			}
			log, _ := polyloop.ReadLog(context.Background(), store, "r1")
			if got := lastKind(log); got != polyloop.KindActionIntent {
				t.Fatalf("log ends with %s, want action_intent; kinds %v", got, kinds(log))
			}
			for _, r := range log.Records {
				if r.Kind() == polyloop.KindRunFinished {
					t.Fatal("run_finished written after an executor error")
				}
			}
			if n := len(log.Steps()); n != 1 {
				t.Fatalf("%d step records, want 1 (the step before the failing action)", n)
			}
			plan, err := polyloop.PlanResume(log)
			if err != nil {
				t.Fatal(err)
			}
			if plan.Action != tc.plan {
				t.Fatalf("plan %s, want %s", plan.Action, tc.plan)
			}
		})
	}
}

type renameExec struct {
	inner    polyloop.ActionExecutor
	from, to string
}

func (r renameExec) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	if a.Tool == r.from {
		a.Tool = r.to
	}
	return r.inner.Execute(ctx, a)
}

// SPEC §3.3: an executor panic propagates; the log stays at intent-without-step.
func TestExecutorPanicPropagates(t *testing.T) {
	store := memstore.New()
	model := scriptmodel.New(call(1, "panic", nil))
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Fatal("executor panic did not propagate out of Run")
			}
		}()
		_, _ = newRunner(model, store, newTestExec()).Run(context.Background(), "r1", testAgent(), polyloop.Task{Input: "go"})
	}()
	log, _ := polyloop.ReadLog(context.Background(), store, "r1")
	if got := lastKind(log); got != polyloop.KindActionIntent {
		t.Fatalf("log ends with %s, want action_intent", got)
	}
	plan, err := polyloop.PlanResume(log)
	if err != nil || plan.Action != polyloop.PlanReconcile {
		t.Fatalf("plan %+v, %v; want reconcile (panic is never_replay)", plan, err)
	}
}

// SPEC §3.2: a parser panic propagates; nothing is invented.
func TestParserPanicPropagates(t *testing.T) {
	store := memstore.New()
	model := scriptmodel.New(scriptmodel.Reply("PANIC please"))
	func() {
		defer func() {
			if r := recover(); r == nil {
				t.Fatal("parser panic did not propagate out of Run")
			}
		}()
		_, _ = newRunner(model, store, newTestExec()).Run(context.Background(), "r1", testAgent(), polyloop.Task{Input: "go"})
	}()
	log, _ := polyloop.ReadLog(context.Background(), store, "r1")
	// run_started + model_call_intent were written before the call; the
	// result is still pending when the parser panics.
	if got := kinds(log); strings.Join(got, ",") != "run_started,model_call_intent" {
		t.Fatalf("kinds %v", got)
	}
}

// SPEC §3.1: a model failure is caught: a result with the failure and
// run_finished llm_error, written together.
func TestModelErrorFinishesLLMError(t *testing.T) {
	store := memstore.New()
	model := scriptmodel.New(call(1, "echo", map[string]string{"text": "a"}), scriptmodel.Fail(&httpErr{status: 503}))
	res, err := newRunner(model, store, newTestExec()).Run(context.Background(), "r1", testAgent(), polyloop.Task{Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != polyloop.StopLLMError {
		t.Fatalf("stop reason %s", res.StopReason)
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "r1")
	k := kinds(log)
	if strings.Join(k[len(k)-2:], ",") != "model_call_result,run_finished" {
		t.Fatalf("kinds %v", k)
	}
	mr := log.ModelResults()
	f := mr[len(mr)-1].Failure
	if f == nil || f.Fields["http_status"] != "503" || !strings.Contains(f.Message, "503") {
		t.Fatalf("failure diagnostic %+v", f)
	}
}

type httpErr struct{ status int }

func (e *httpErr) Error() string { return "provider answered HTTP " + itoa(e.status) }
func (e *httpErr) DiagFields() map[string]string {
	return map[string]string{"http_status": itoa(e.status)}
}

// SPEC §7.3: cancelling during the model call gives context.Canceled and no
// result record; the run stays resumable.
func TestCancelDuringModelCall(t *testing.T) {
	store := memstore.New()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The model is cancelled once the call is under way, and honours it.
	model := scriptmodel.New(scriptmodel.Turn{Text: "slow", Delay: time.Hour})
	onEnter := &cancelOnEnter{inner: model, cancel: cancel}
	_, err := newRunner(onEnter, store, newTestExec()).Run(ctx, "r1", testAgent(), polyloop.Task{Input: "go"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "r1")
	if got := strings.Join(kinds(log), ","); got != "run_started,model_call_intent" {
		t.Fatalf("kinds %v: a record was invented for a cancelled call", got)
	}
	if plan, err := polyloop.PlanResume(log); err != nil || plan.Action != polyloop.PlanRetryModelCall {
		t.Fatalf("plan %+v %v", plan, err)
	}
}

// SPEC §7.3: cancelling during an action propagates the executor's
// context error with no step record.
func TestCancelDuringAction(t *testing.T) {
	store := memstore.New()
	model := scriptmodel.New(call(1, "block", nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exec := &cancelOnEnterExec{inner: newTestExec(), cancel: cancel}
	_, err := newRunner(model, store, exec).Run(ctx, "r1", testAgent(), polyloop.Task{Input: "go"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "r1")
	if lastKind(log) != polyloop.KindActionIntent {
		t.Fatalf("kinds %v", kinds(log))
	}
}

// cancelOnEnter cancels the run as its model call starts.
type cancelOnEnter struct {
	inner  polyloop.ModelClient
	cancel context.CancelFunc
}

func (c *cancelOnEnter) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	c.cancel()
	return c.inner.Complete(ctx, req)
}

// cancelOnEnterExec cancels the run as its action starts.
type cancelOnEnterExec struct {
	inner  polyloop.ActionExecutor
	cancel context.CancelFunc
}

func (c *cancelOnEnterExec) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	c.cancel()
	return c.inner.Execute(ctx, a)
}

// SPEC §3.3: not_executed and env_error put the synthetic text, flagged, into
// the history; the executor's own text goes only to events; env_error writes
// step_completed before run_finished.
func TestSyntheticObservations(t *testing.T) {
	store := memstore.New()
	rec := &requestRecorder{inner: scriptmodel.New(call(1, "refuse", nil), call(2, "broken", nil))}
	sink := &collectSink{}
	agent := testAgent()
	agent.Synthetic = polyloop.SyntheticObservations{NotExecuted: "SYN-NOT", EnvError: "SYN-ENV"}
	r := &polyloop.Runner{Model: rec, Parser: testParser{}, Executor: newTestExec(), Store: store, Sinks: []polyloop.EventSink{sink}}
	res, err := r.Run(context.Background(), "r1", agent, polyloop.Task{Input: "go"})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != polyloop.StopEnvError {
		t.Fatalf("stop %s", res.StopReason)
	}
	second := rec.reqs[1].Messages
	last := second[len(second)-1]
	if last.Role != polyloop.RoleTool || last.Content != "SYN-NOT" || !last.Synthetic || last.ToolCallID != "call_1" {
		t.Fatalf("history after not_executed ends with %+v", last)
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "r1")
	k := kinds(log)
	if strings.Join(k[len(k)-2:], ",") != "step_completed,run_finished" {
		t.Fatalf("kinds %v", k)
	}
	steps := log.Steps()
	for i, want := range []string{"SYN-NOT", "SYN-ENV"} {
		s := steps[i]
		if s.Observation != want || !s.Synthetic || s.TruncatedChars != 0 {
			t.Fatalf("step %d record %+v", i+1, s)
		}
	}
	var audit []string
	for _, ev := range sink.events {
		if ev.Kind == polyloop.EventActionFinished {
			audit = append(audit, ev.Outcome.Observation)
		}
	}
	if strings.Join(audit, "|") != "executor's own refusal text|executor's own env text" {
		t.Fatalf("audit channel carried %q", audit)
	}
	// The executor's own text is kept in the record's audit field, for
	// people, and nowhere else: never in the history.
	for i, want := range []string{"executor's own refusal text", "executor's own env text"} {
		if steps[i].Audit != want {
			t.Errorf("step %d audit = %q, want %q", i+1, steps[i].Audit, want)
		}
	}
	for _, m := range polyloop.History(log) {
		if strings.Contains(m.Content, "executor's own") {
			t.Fatalf("executor text entered the history: %+v", m)
		}
	}
	for _, r := range log.Records {
		b, _ := r.MarshalJSON()
		if n := strings.Count(string(b), "executor's own"); n > 0 && (n != 1 || !strings.Contains(string(b), `"audit":"executor's own`)) {
			t.Fatalf("executor text entered the log outside the audit field: %s", b)
		}
	}
}

type requestRecorder struct {
	inner polyloop.ModelClient
	reqs  []polyloop.ModelRequest
	// describe makes the recorder describe itself as the client it wraps.
	describe bool
}

func (r *requestRecorder) Describe() polyloop.Component {
	if r.describe {
		return polyloop.Describe(r.inner)
	}
	return polyloop.Component{Name: fmt.Sprintf("%T", r)}
}

func (r *requestRecorder) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	cp := req
	cp.Messages = append([]polyloop.Message(nil), req.Messages...)
	r.reqs = append(r.reqs, cp)
	return r.inner.Complete(ctx, req)
}

// SPEC §3.4: ReadLog of an unknown run is empty with no error; Run on an
// existing id is ErrRunExists; Resume of an unknown id is ErrRunNotFound.
func TestRunIdentity(t *testing.T) {
	store := memstore.New()
	ctx := context.Background()
	log, err := polyloop.ReadLog(ctx, store, "nobody")
	if err != nil || !log.Empty() {
		t.Fatalf("ReadLog unknown = %+v, %v", log, err)
	}
	r := newRunner(scriptmodel.New(scriptmodel.Reply("answer")), store, newTestExec())
	res, err := r.Run(ctx, "r1", testAgent(), polyloop.Task{Input: "go"})
	if err != nil || res.StopReason != polyloop.StopCompleted || res.FinalAnswer != "answer" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if _, err := r.Run(ctx, "r1", testAgent(), polyloop.Task{Input: "go"}); !errors.Is(err, polyloop.ErrRunExists) {
		t.Fatalf("second Run err = %v, want ErrRunExists", err)
	}
	if _, err := r.Resume(ctx, "nobody", testAgent()); !errors.Is(err, polyloop.ErrRunNotFound) {
		t.Fatalf("Resume unknown err = %v, want ErrRunNotFound", err)
	}
	res2, err := r.Resume(ctx, "r1", testAgent())
	if err != nil || res2.StopReason != polyloop.StopCompleted || res2.Plan.Action != polyloop.PlanAlreadyFinished {
		t.Fatalf("Resume finished = %+v, %v", res2, err)
	}
	if r.Model.(*scriptmodel.Client).Calls() != 1 {
		t.Fatal("resuming a finished run called the model")
	}
	gen, err := r.Run(ctx, "", testAgent(), polyloop.Task{Input: "go"})
	if err != nil || len(gen.RunID) != 26 {
		t.Fatalf("generated run id %q, %v", gen.RunID, err)
	}
	// A run that fails still names itself, so that it can be resumed.
	failing := newRunner(scriptmodel.New(call(1, "fail", nil)), store, newTestExec())
	res3, err := failing.Run(ctx, "", testAgent(), polyloop.Task{Input: "go"})
	if err == nil || len(res3.RunID) != 26 {
		t.Fatalf("failed run: id %q, err %v", res3.RunID, err)
	}
	if log, _ := polyloop.ReadLog(ctx, store, res3.RunID); log.Empty() {
		t.Fatal("the failed run's id names no log")
	}
}

// SPEC §7.4: a store failing on append N gives a *PersistenceError wrapping
// the cause; nothing more is written and nothing is retried.
func TestStoreFailure(t *testing.T) {
	cause := errors.New("disk on fire")
	for n := 1; n <= 4; n++ {
		store := memstore.NewWithOptions(memstore.Options{FailAppend: n, FailErr: cause})
		model := scriptmodel.New(call(1, "echo", map[string]string{"text": "a"}), call(2, "echo", map[string]string{"text": "b"}), scriptmodel.Reply("end"))
		_, err := newRunner(model, store, newTestExec()).Run(context.Background(), "r1", testAgent(), polyloop.Task{Input: "go"})
		var pe *polyloop.PersistenceError
		if !errors.As(err, &pe) || !errors.Is(err, cause) || errors.Unwrap(pe) != cause {
			t.Fatalf("n=%d: err = %v, want *PersistenceError wrapping the cause", n, err)
		}
		if store.Appends() != n {
			t.Fatalf("n=%d: %d appends were attempted; the run must stop writing at the failure", n, store.Appends())
		}
	}
	// An adapter's own PersistenceError keeps its identity.
	own := &polyloop.PersistenceError{Op: "append", RunID: "r1", Err: cause}
	store := memstore.NewWithOptions(memstore.Options{FailAppend: 1, FailErr: own})
	_, err := newRunner(scriptmodel.New(scriptmodel.Reply("x")), store, newTestExec()).Run(context.Background(), "r1", testAgent(), polyloop.Task{Input: "go"})
	var pe *polyloop.PersistenceError
	if !errors.As(err, &pe) || pe != own {
		t.Fatalf("adapter's PersistenceError identity lost: %v", err)
	}
}

// SPEC §4: two durable writes per step.
func TestTwoWritesPerStep(t *testing.T) {
	const steps = 10
	turns := make([]scriptmodel.Turn, 0, steps+1)
	for i := 1; i <= steps; i++ {
		turns = append(turns, call(i, "echo", map[string]string{"text": "x"}))
	}
	turns = append(turns, scriptmodel.Reply("done"))
	store := memstore.New()
	res, err := newRunner(scriptmodel.New(turns...), store, newTestExec()).Run(context.Background(), "r1", testAgent(), polyloop.Task{Input: "go"})
	if err != nil || res.Totals.Steps != steps+1 {
		t.Fatalf("%+v %v", res, err)
	}
	// Every step writes twice: the batch that carries its model-call intent
	// (with RunStarted, or with the previous step's record) and the batch
	// before its action (result + action intent) — or, for the final step,
	// result + step record + run_finished.
	if got, want := store.Appends(), 2*(steps+1); got != want {
		t.Fatalf("%d appends for %d action steps and a final one, want %d", got, steps, want)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// An Act whose arguments are not JSON is a parser bug: it propagates as
// ErrInvalidDecision, never as a storage failure, and no intent is written.
func TestInvalidDecisionArgs(t *testing.T) {
	store := memstore.New()
	r := &polyloop.Runner{Model: scriptmodel.New(scriptmodel.Reply("x")), Parser: badArgsParser{}, Executor: newTestExec(), Store: store}
	_, err := r.Run(context.Background(), "r", testAgent(), polyloop.Task{Input: "t"})
	var pe *polyloop.PersistenceError
	if !errors.Is(err, polyloop.ErrInvalidDecision) || errors.As(err, &pe) {
		t.Fatalf("err = %v", err)
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "r")
	if lastKind(log) != polyloop.KindModelCallIntent {
		t.Fatalf("kinds %v", kinds(log))
	}
}

type badArgsParser struct{}

func (badArgsParser) Parse(polyloop.ModelReply) polyloop.Decision {
	return polyloop.ActOne(polyloop.Action{Tool: "echo", Args: json.RawMessage(`{"text": oops`)})
}

// A model client whose reply breaks the contract (tool-call arguments that
// are not JSON) is a model failure: recorded with its diagnostic, llm_error.
// Never a storage failure.
func TestInvalidReplyIsLLMError(t *testing.T) {
	store := memstore.New()
	bad := &argsModel{args: `{"text": oops`}
	res, err := newRunner(bad, store, newTestExec()).Run(context.Background(), "r", testAgent(), polyloop.Task{Input: "t"})
	if err != nil || res.StopReason != polyloop.StopLLMError {
		t.Fatalf("%+v %v", res, err)
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "r")
	if f := log.ModelResults()[0].Failure; f == nil || !strings.Contains(f.Message, "not JSON") {
		t.Fatalf("failure %+v", f)
	}
}
