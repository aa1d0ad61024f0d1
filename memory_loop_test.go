package polyloop_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/polylooptest"
	"github.com/polyloop/polyloop/scriptmodel"
)

// memoryScript: two echo steps and a final answer.
func memoryScript() *scriptmodel.Client {
	return scriptmodel.New(
		call(1, "echo", map[string]string{"text": "one"}),
		scriptmodel.Reply("INVALID: think again"),
		scriptmodel.Reply("the answer"),
	)
}

// viewMaintainer adds, after each step, one entry to the view under the
// write id of the step, through a recorded operation, and counts the
// operations that ran.
func viewMaintainer(v *stepView, ran *counter) *funcMaintainer {
	return &funcMaintainer{fn: func(ctx context.Context, s polyloop.MaintainedStep) error {
		_, err := polyloop.Perform(ctx, polyloop.Operation[int64]{
			Name: "view", WriteID: fmt.Sprintf("%s/%d~view", s.RunID, s.Step),
			Do: func(context.Context) (int64, error) {
				ran.add(fmt.Sprintf("view/%d", s.Step))
				return v.add(fmt.Sprintf("%s/%d", s.RunID, s.Step), viewEntry(s.Step)), nil
			},
		})
		return err
	}}
}

func memoryAgent(v *stepView, m polyloop.Maintainer) polyloop.Agent {
	a := testAgent()
	a.Memory = &polyloop.AgentMemory{View: v, Maintainer: m}
	return a
}

// Each model-call intent names the view version its call shows, and the
// request shows that version's rendering after the system prompt: nothing
// for the empty view, then the entries the maintenance of the earlier steps
// added.
func TestViewNamedOnIntentAndShown(t *testing.T) {
	store := memstore.New()
	v := newStepView()
	model := &requestLog{ModelClient: memoryScript()}
	r := newRunner(model, store, newTestExec())
	res, err := r.Run(context.Background(), "r", memoryAgent(v, viewMaintainer(v, &counter{})), polyloop.Task{Input: "task"})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != polyloop.StopCompleted {
		t.Fatalf("stop %s", res.StopReason)
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "r")
	var views []string
	for _, in := range bodiesOf[*polyloop.ModelCallIntent](log) {
		if in.View == nil {
			t.Fatalf("intent %s names no view", in.CallID)
		}
		views = append(views, fmt.Sprintf("%s@%d", in.View.Name, in.View.Version))
	}
	if got := strings.Join(views, " "); got != "notes@0 notes@1 notes@2" {
		t.Fatalf("views on intents: %s", got)
	}
	reqs := model.byStep()
	if strings.Contains(reqs["1"], "What you remember") {
		t.Fatalf("the empty view was shown: %s", reqs["1"])
	}
	want := `{"role":"system","content":"What you remember (notes, version 2):\n- notes/k1: learnt at step 1\n- notes/k2: learnt at step 2\n"}`
	if !strings.HasPrefix(reqs["3"], `[{"role":"system","content":"You are a test agent."},`+want+`,{"role":"user","content":"task"}`) {
		t.Fatalf("request of step 3:\n%s\nwant the view after the system prompt:\n%s", reqs["3"], want)
	}
}

// The maintenance of a step lies between the step record and the next
// step's intent, and ends with maintenance_done; its operation's outcome is
// recorded.
func TestMaintenanceRecordsBetweenSteps(t *testing.T) {
	store := memstore.New()
	v := newStepView()
	r := newRunner(memoryScript(), store, newTestExec())
	if _, err := r.Run(context.Background(), "r", memoryAgent(v, viewMaintainer(v, &counter{})), polyloop.Task{Input: "task"}); err != nil {
		t.Fatal(err)
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "r")
	got := strings.Join(kinds(log), " ")
	step := "maintenance_op maintenance_done"
	want := "run_started model_call_intent model_call_result action_intent step_completed " + step +
		" model_call_intent model_call_result step_completed " + step +
		" model_call_intent model_call_result step_completed " + step + " run_finished"
	if got != want {
		t.Fatalf("kinds:\n%s\nwant:\n%s", got, want)
	}
	op := log.Records[5].Body.(*polyloop.MaintenanceOp)
	if op.Step != 1 || op.Name != "view" || op.WriteID != "r/1~view" || op.Outcome != polyloop.OpDone || string(op.Value) != "1" {
		t.Fatalf("operation record %+v", op)
	}
}

// Crash at every record boundary, then resume: the run ends with the
// uninterrupted run's records, the model sees the same view at every step,
// and an operation whose outcome the log recorded is never performed again.
func TestMaintenanceCrashEveryBoundary(t *testing.T) {
	ref := memstore.New()
	refView := newStepView()
	refModel := &requestLog{ModelClient: memoryScript()}
	if _, err := newRunner(refModel, ref, newTestExec()).Run(context.Background(), "r", memoryAgent(refView, viewMaintainer(refView, &counter{})), polyloop.Task{Input: "task"}); err != nil {
		t.Fatal(err)
	}
	want, _ := polyloop.ReadLog(context.Background(), ref, "r")
	for n := 1; n < len(want.Records); n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			store := memstore.NewWithOptions(memstore.Options{CrashAfter: n})
			v := newStepView()
			ran := &counter{}
			agent := memoryAgent(v, viewMaintainer(v, ran))
			model := &requestLog{ModelClient: memoryScript()}
			r := newRunner(model, store, newTestExec())
			if _, err := r.Run(context.Background(), "r", agent, polyloop.Task{Input: "task"}); err == nil {
				t.Fatal("the crash did not stop the run")
			}
			store.SetFaults(memstore.Options{})
			crashed, _ := polyloop.ReadLog(context.Background(), store, "r")
			recorded := map[int]bool{}
			for _, op := range bodiesOf[*polyloop.MaintenanceOp](crashed) {
				recorded[op.Step] = true
			}
			ran.reset()
			var res polyloop.RunResult
			var err error
			if len(crashed.Records) == 0 {
				res, err = r.Run(context.Background(), "r", agent, polyloop.Task{Input: "task"})
			} else {
				res, err = r.Resume(context.Background(), "r", agent)
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.StopReason != polyloop.StopCompleted {
				t.Fatalf("stop %s", res.StopReason)
			}
			for step := range recorded {
				if ran.get(fmt.Sprintf("view/%d", step)) != 0 {
					t.Errorf("the operation of step %d, recorded before the crash, ran again", step)
				}
			}
			got, _ := polyloop.ReadLog(context.Background(), store, "r")
			sameLog(t, "resumed", got, want)
			for step, msgs := range refModel.byStep() {
				if model.byStep()[step] != msgs {
					t.Errorf("step %s: the model saw\n%s\nthe uninterrupted run's model saw\n%s", step, model.byStep()[step], msgs)
				}
			}
		})
	}
}

func bodiesOf[T polyloop.RecordBody](log polyloop.RunLog) []T {
	var out []T
	for _, r := range log.Records {
		if b, ok := r.Body.(T); ok {
			out = append(out, b)
		}
	}
	return out
}

// The maintainer is told the step it maintains: the messages the step added
// to the history, the decision, and the view its model call showed.
func TestMaintainedStepContent(t *testing.T) {
	v := newStepView()
	var got []polyloop.MaintainedStep
	m := &funcMaintainer{fn: func(ctx context.Context, s polyloop.MaintainedStep) error {
		got = append(got, s)
		return nil
	}}
	if _, err := newRunner(memoryScript(), memstore.New(), newTestExec()).Run(context.Background(), "r", memoryAgent(v, m), polyloop.Task{Input: "task"}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d steps maintained", len(got))
	}
	s1 := got[0]
	if s1.Step != 1 || s1.Decision != polyloop.DecisionAct || len(s1.Messages) != 2 ||
		s1.Messages[0].Role != polyloop.RoleAssistant || s1.Messages[1].Content != "one" || s1.View == nil || s1.View.Version != 0 {
		t.Fatalf("step 1: %+v", s1)
	}
	if s2 := got[1]; s2.Decision != polyloop.DecisionInvalid || len(s2.Messages) != 2 || !s2.Messages[1].Feedback {
		t.Fatalf("step 2: %+v", s2)
	}
	if s3 := got[2]; s3.Decision != polyloop.DecisionFinal || s3.Answer != "the answer" || len(s3.Messages) != 1 {
		t.Fatalf("step 3: %+v", s3)
	}
}

// A Maintainer's error propagates out of Run; nothing is recorded after the
// step's own records, and a resume maintains the step again.
func TestMaintenanceErrorPropagates(t *testing.T) {
	store := memstore.New()
	boom := errors.New("maintainer bug")
	m := &funcMaintainer{fn: func(ctx context.Context, s polyloop.MaintainedStep) error { return boom }}
	agent := memoryAgent(newStepView(), m)
	r := newRunner(memoryScript(), store, newTestExec())
	if _, err := r.Run(context.Background(), "r", agent, polyloop.Task{Input: "task"}); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the maintainer's", err)
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "r")
	if lastKind(log) != polyloop.KindStepCompleted {
		t.Fatalf("log ends with %s", lastKind(log))
	}
	plan, err := polyloop.PlanResume(log)
	if err != nil || plan.Action != polyloop.PlanMaintain || plan.Step != 1 {
		t.Fatalf("plan %+v, %v", plan, err)
	}
	m.fn = func(ctx context.Context, s polyloop.MaintainedStep) error { return nil }
	res, err := r.Resume(context.Background(), "r", agent)
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("resume: %+v, %v", res, err)
	}
	if m.calls != 4 {
		t.Fatalf("Maintain called %d times, want 4 (step 1 twice, 2, 3)", m.calls)
	}
}

// A view that fails stops the run before the intent it was asked for; the
// facts already established (the step record, its maintenance) are written.
func TestViewFailureKeepsFacts(t *testing.T) {
	store := memstore.New()
	v := newStepView()
	boom := &polyloop.PersistenceError{Op: "load view", Err: errors.New("disk gone")}
	m := &funcMaintainer{fn: func(ctx context.Context, s polyloop.MaintainedStep) error {
		v.fail = boom // the next intent's view cannot be read
		return nil
	}}
	r := newRunner(memoryScript(), store, newTestExec())
	_, err := r.Run(context.Background(), "r", memoryAgent(v, m), polyloop.Task{Input: "task"})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "r")
	if lastKind(log) != polyloop.KindMaintenanceDone {
		t.Fatalf("log ends with %s: %v", lastKind(log), kinds(log))
	}
}

// Cancellation inside the maintenance: what it recorded stays, nothing is
// invented, and a resume goes on from it without performing it again.
func TestMaintenanceCancelled(t *testing.T) {
	store := memstore.New()
	ran := &counter{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := &funcMaintainer{}
	m.fn = func(mctx context.Context, s polyloop.MaintainedStep) error {
		if _, err := polyloop.Perform(mctx, polyloop.Operation[string]{Name: "first",
			Do: func(context.Context) (string, error) { ran.add("first"); return "ok", nil }}); err != nil {
			return err
		}
		if m.calls == 1 {
			cancel()
		}
		_, err := polyloop.Perform(mctx, polyloop.Operation[string]{Name: "second",
			Do: func(context.Context) (string, error) { ran.add("second"); return "ok", nil }})
		return err
	}
	agent := memoryAgent(newStepView(), m)
	r := newRunner(memoryScript(), store, newTestExec())
	if _, err := r.Run(ctx, "r", agent, polyloop.Task{Input: "task"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "r")
	if got := strings.Join(kinds(log)[4:], " "); got != "step_completed maintenance_op" {
		t.Fatalf("after the action: %s", got)
	}
	if _, err := r.Resume(context.Background(), "r", agent); err != nil {
		t.Fatal(err)
	}
	if ran.get("first") != 3 || ran.get("second") != 3 {
		t.Fatalf("first ran %d times, second %d: want 3 each (one per step)", ran.get("first"), ran.get("second"))
	}
}

// Sinks see the view on step_started and model_call_started, and the
// maintenance's records as maintenance_op and maintenance_done events, each
// after its record is durable.
func TestMaintenanceEvents(t *testing.T) {
	store := memstore.New()
	v := newStepView()
	sink := &polylooptest.FaultySink{}
	r := newRunner(memoryScript(), store, newTestExec())
	r.Sinks = []polyloop.EventSink{sink}
	if _, err := r.Run(context.Background(), "r", memoryAgent(v, viewMaintainer(v, &counter{})), polyloop.Task{Input: "task"}); err != nil {
		t.Fatal(err)
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "r")
	var got []string
	for _, ev := range sink.Events() {
		switch ev.Kind {
		case polyloop.EventStepStarted:
			got = append(got, fmt.Sprintf("%s@%d", ev.Kind, ev.View.Version))
		case polyloop.EventMaintenanceOp:
			got = append(got, fmt.Sprintf("%s %s %s", ev.Kind, ev.Operation.Name, ev.Operation.Outcome))
			if log.Records[ev.Seq].Kind() != polyloop.KindMaintenanceOp {
				t.Errorf("event seq %d is a %s record", ev.Seq, log.Records[ev.Seq].Kind())
			}
		case polyloop.EventMaintenanceDone:
			got = append(got, fmt.Sprintf("%s %d", ev.Kind, ev.Step))
		}
	}
	want := "step_started@0 maintenance_op view done maintenance_done 1 step_started@1 maintenance_op view done maintenance_done 2 step_started@2 maintenance_op view done maintenance_done 3"
	if strings.Join(got, " ") != want {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, " "), want)
	}
}

// A cancellation that lands once the maintenance returned: its end is a
// fact and is written; the next intent is not, and no view is asked for.
func TestCancelAfterMaintenance(t *testing.T) {
	store := memstore.New()
	v := newStepView()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := &funcMaintainer{fn: func(context.Context, polyloop.MaintainedStep) error { cancel(); return nil }}
	r := newRunner(memoryScript(), store, newTestExec())
	if _, err := r.Run(ctx, "r", memoryAgent(v, m), polyloop.Task{Input: "task"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "r")
	if lastKind(log) != polyloop.KindMaintenanceDone || v.current != 1 {
		t.Fatalf("log ends with %s (view asked %d times): %v", lastKind(log), v.current, kinds(log))
	}
}

// A batch whose actions run in parallel is maintained once it is complete.
func TestMaintenanceAfterParallelBatch(t *testing.T) {
	store := memstore.New()
	v := newStepView()
	two := scriptmodel.Turn{ToolCalls: []polyloop.ToolCall{
		{ID: "c1", Name: "echo", Args: []byte(`{"text":"x"}`)}, {ID: "c2", Name: "echo", Args: []byte(`{"text":"y"}`)}}}
	var got []int
	m := &funcMaintainer{fn: func(ctx context.Context, s polyloop.MaintainedStep) error {
		got = append(got, len(s.Messages))
		return nil
	}}
	agent := memoryAgent(v, m)
	agent.ParallelActions = true
	res, err := newRunner(scriptmodel.New(two, scriptmodel.Reply("done")), store, newTestExec()).Run(context.Background(), "r", agent, polyloop.Task{Input: "task"})
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("%+v, %v", res, err)
	}
	if fmt.Sprint(got) != "[3 1]" {
		t.Fatalf("maintained steps with %v messages, want [3 1]", got)
	}
}

// A view template that does not parse, or does not execute on a view
// (a field that does not exist), or without a view, is refused before the
// run starts.
func TestViewTemplateChecked(t *testing.T) {
	for name, mem := range map[string]*polyloop.AgentMemory{
		"syntax":    {View: newStepView(), Template: "{{.Name"},
		"field":     {View: newStepView(), Template: "{{range .Entries}}{{.Nope}}{{end}}"},
		"no view":   {Template: "{{.Name}}"},
		"top field": {View: newStepView(), Template: "{{.Members}}"},
	} {
		agent := testAgent()
		agent.Memory = mem
		_, err := newRunner(memoryScript(), memstore.New(), newTestExec()).Run(context.Background(), "r", agent, polyloop.Task{Input: "x"})
		if !errors.Is(err, polyloop.ErrInvalidConfig) {
			t.Errorf("%s: err = %v, want ErrInvalidConfig", name, err)
		}
	}
}
