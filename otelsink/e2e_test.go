package otelsink_test

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/otelsink"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/toolcallparser"
)

// e2eExecutor is a small environment: lookup works, db is down, anything
// else does not exist.
type e2eExecutor struct{}

func (e2eExecutor) Execute(_ context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	switch a.Tool {
	case "lookup":
		return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "value for " + string(a.Args)}, nil
	case "db":
		return polyloop.ActionOutcome{Status: polyloop.EnvError, Observation: "dial tcp 127.0.0.1:5432: connection refused"}, nil
	}
	return polyloop.ActionOutcome{Status: polyloop.NotExecuted, Observation: "no tool " + a.Tool}, nil
}

var e2eAgent = polyloop.Agent{
	Name:   "e2e",
	Tools:  []polyloop.ToolSpec{{Name: "lookup", Replay: polyloop.ReplaySafe}, {Name: "db"}},
	Limits: polyloop.Limits{MaxSteps: 6},
	Model:  polyloop.ModelParams{Provider: "script", Model: "script-1", Temperature: new(0.0), Seed: new(int64(1))},
}

func e2eRunner(store polyloop.Store, model *scriptmodel.Client, sink polyloop.EventSink) *polyloop.Runner {
	return &polyloop.Runner{Model: model, Parser: toolcallparser.New(toolcallparser.Options{}),
		Executor: e2eExecutor{}, Store: store, Sinks: []polyloop.EventSink{sink}}
}

func runE2E(t *testing.T, turns ...scriptmodel.Turn) (polyloop.RunResult, map[string][]sdktrace.ReadOnlySpan, []sdktrace.ReadOnlySpan) {
	t.Helper()
	sink, sr := recorder(otelsink.Options{})
	r := e2eRunner(memstore.New(), scriptmodel.New(turns...), sink)
	res, err := r.Run(context.Background(), "", e2eAgent, polyloop.Task{Input: "look it up"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(res.Sinks) != 0 {
		t.Errorf("sink failures reported: %+v", res.Sinks)
	}
	if len(sr.Started()) != len(sr.Ended()) {
		t.Errorf("%d spans started, %d ended: a finished run leaves nothing open", len(sr.Started()), len(sr.Ended()))
	}
	return res, byName(sr.Ended()), sr.Ended()
}

func TestE2ECompletedRun(t *testing.T) {
	t.Parallel()
	res, spans, all := runE2E(t,
		scriptmodel.Call("c1", "lookup", map[string]string{"k": "a"}),
		scriptmodel.Call("c2", "nope", map[string]string{}),
		scriptmodel.Reply("the answer"))
	if res.StopReason != polyloop.StopCompleted {
		t.Fatalf("stop reason %s", res.StopReason)
	}
	if len(all) != 6 || len(spans["chat script-1"]) != 3 || len(spans["execute_tool lookup"]) != 1 || len(spans["execute_tool nope"]) != 1 {
		t.Fatalf("spans %v", names(all))
	}
	inv := spans["invoke_agent e2e"][0]
	wantAttrs(t, inv, map[string]any{"polyloop.run_id": res.RunID, "polyloop.stop_reason": "completed",
		"polyloop.end_seq": res.Records - 1, "polyloop.totals.steps": int64(3), "gen_ai.provider.name": "script"})
	for _, s := range all {
		if s != inv && s.Parent().SpanID() != inv.SpanContext().SpanID() {
			t.Errorf("%s is not a child of the invocation", s.Name())
		}
	}
	chat := spans["chat script-1"][0]
	wantAttrs(t, chat, map[string]any{"gen_ai.request.temperature": 0.0, "gen_ai.request.seed": int64(1),
		"gen_ai.response.model": "script", "gen_ai.response.finish_reasons": []string{"tool_calls"}})
	wantAttrs(t, spans["execute_tool lookup"][0], map[string]any{"gen_ai.tool.call.id": "c1",
		"polyloop.action.status": "executed", "polyloop.observation.synthetic": false})
	nope := spans["execute_tool nope"][0]
	wantAttrs(t, nope, map[string]any{"polyloop.action.status": "not_executed", "polyloop.observation.synthetic": true})
	if nope.Status().Code != codes.Error || inv.Status().Code != codes.Unset {
		t.Errorf("statuses: not_executed %v, invocation %v", nope.Status(), inv.Status())
	}
}

func TestE2EEnvError(t *testing.T) {
	t.Parallel()
	res, spans, _ := runE2E(t, scriptmodel.Call("c1", "db", map[string]string{"sql": "select 1"}))
	if res.StopReason != polyloop.StopEnvError {
		t.Fatalf("stop reason %s", res.StopReason)
	}
	db := spans["execute_tool db"][0]
	if db.Status().Code != codes.Error {
		t.Errorf("db span status %v", db.Status())
	}
	wantAttrs(t, db, map[string]any{"error.type": "env_error", "polyloop.observation.synthetic": true})
	inv := spans["invoke_agent e2e"][0]
	wantAttrs(t, inv, map[string]any{"error.type": "env_error", "polyloop.stop_reason": "env_error"})
	if inv.Status().Code != codes.Error {
		t.Errorf("invocation status %v", inv.Status())
	}
}

func TestE2ELLMError(t *testing.T) {
	t.Parallel()
	res, spans, all := runE2E(t, scriptmodel.Fail(errors.New("HTTP 503: overloaded")))
	if res.StopReason != polyloop.StopLLMError || len(all) != 2 {
		t.Fatalf("stop reason %s, spans %v", res.StopReason, names(all))
	}
	chat := spans["chat script-1"][0]
	if chat.Status().Code != codes.Error || chat.Status().Description != "HTTP 503: overloaded" {
		t.Errorf("chat status %v", chat.Status())
	}
	wantAttrs(t, chat, map[string]any{"error.type": otelsink.ErrorTypeOther}) // a plain error says nothing more
	wantAttrs(t, spans["invoke_agent e2e"][0], map[string]any{"error.type": "llm_error"})
}

// TestE2EResume crashes the store after an action's intent, ends the
// invocation with EndRun, and resumes from the log: both invocations are in
// the run's trace, and the resumed one links to the run's anchor and to the
// aborted invocation.
func TestE2EResume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sink, sr := recorder(otelsink.Options{})
	model := scriptmodel.New(scriptmodel.Call("c1", "lookup", map[string]string{"k": "a"}), scriptmodel.Reply("done"))
	crashing := memstore.NewWithOptions(memstore.Options{CrashAfter: 4}) // keeps RunStarted … ActionIntent(1)
	_, err := e2eRunner(crashing, model, sink).Run(ctx, "run-resume", e2eAgent, polyloop.Task{Input: "x"})
	var perr *polyloop.PersistenceError
	if !errors.As(err, &perr) {
		t.Fatalf("Run on a crashing store: %v; want a PersistenceError", err)
	}
	sink.EndRun("run-resume", err)
	if len(sr.Started()) != len(sr.Ended()) {
		t.Fatalf("EndRun left spans open")
	}
	first := byName(sr.Ended())["invoke_agent e2e"][0]
	wantAttrs(t, first, map[string]any{"error.type": otelsink.ErrorTypePersistence})
	wantAttrs(t, byName(sr.Ended())["execute_tool lookup"][0], map[string]any{"error.type": otelsink.ErrorTypePersistence})

	log, err := polyloop.ReadLog(ctx, crashing, "run-resume")
	if err != nil {
		t.Fatal(err)
	}
	fresh := memstore.New()
	if err := polyloop.AppendRecords(ctx, fresh, "run-resume", log.Records...); err != nil {
		t.Fatal(err)
	}
	res, err := e2eRunner(fresh, model, sink).Resume(ctx, "run-resume", e2eAgent)
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("Resume: %v, %+v", err, res)
	}
	invs := byName(sr.Ended())["invoke_agent e2e"]
	if len(invs) != 2 {
		t.Fatalf("spans %v", names(sr.Ended()))
	}
	wantAttrs(t, invs[1], map[string]any{"polyloop.resume.plan": "replay_action", "polyloop.invocation": "resume"})
	wantLinks(t, invs[1], map[string]trace.SpanContext{
		otelsink.LinkPreviousInvocation: first.SpanContext(),
	})
	for _, s := range sr.Ended() {
		if s.SpanContext().TraceID() != otelsink.RunAnchor("run-resume").TraceID() {
			t.Errorf("%s is in trace %v; want the run's anchor trace", s.Name(), s.SpanContext().TraceID())
		}
	}
	replayed := byName(sr.Ended())["execute_tool lookup"][1]
	wantAttrs(t, replayed, map[string]any{"polyloop.attempt": int64(2), "polyloop.action.status": "executed"})
	if replayed.Parent().SpanID() != invs[1].SpanContext().SpanID() {
		t.Errorf("replayed action is not a child of the resumed invocation")
	}
}

// delegateExecutor runs a child agent for the tool "delegate".
type delegateExecutor struct{ child polyloop.Child }

func (x delegateExecutor) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	if a.Tool != "delegate" {
		return polyloop.ActionOutcome{Status: polyloop.NotExecuted, Observation: "no tool " + a.Tool}, nil
	}
	res, err := polyloop.InvokeChild(ctx, x.child, polyloop.Task{Input: "help"}, polyloop.Receive[polyloop.RunResult]{})
	if err != nil {
		return polyloop.ActionOutcome{}, err
	}
	return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: res.FinalAnswer}, nil
}

// TestE2EChildRunNested checks that a child run started from an action is
// traced under that action's execute_tool span, and the caller's span
// stays the root.
func TestE2EChildRunNested(t *testing.T) {
	t.Parallel()
	sink, sr := recorder(otelsink.Options{})
	store := memstore.New()
	parser := toolcallparser.New(toolcallparser.Options{})
	childRunner := &polyloop.Runner{Model: scriptmodel.New(scriptmodel.Reply("child answer")), Parser: parser,
		Executor: e2eExecutor{}, Store: store, Sinks: []polyloop.EventSink{sink}}
	parent := &polyloop.Runner{Model: scriptmodel.New(scriptmodel.Call("c1", "delegate", map[string]string{}), scriptmodel.Reply("done")),
		Parser: parser, Store: store, Sinks: []polyloop.EventSink{sink},
		Executor: delegateExecutor{child: polyloop.Child{Runner: childRunner, Agent: polyloop.Agent{Name: "helper"}}}}
	agent := polyloop.Agent{Name: "boss", Tools: []polyloop.ToolSpec{{Name: "delegate"}}}

	ctx, root := sdktrace.NewTracerProvider().Tracer("app").Start(context.Background(), "request")
	res, err := parent.Run(ctx, "run-parent", agent, polyloop.Task{Input: "go"})
	root.End()
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("Run: %v, %+v", err, res)
	}
	spans := byName(sr.Ended())
	boss, tool, helper := spans["invoke_agent boss"], spans["execute_tool delegate"], spans["invoke_agent helper"]
	if len(boss) != 1 || len(tool) != 1 || len(helper) != 1 {
		t.Fatalf("spans %v", names(sr.Ended()))
	}
	if boss[0].Parent().SpanID() != root.SpanContext().SpanID() {
		t.Errorf("parent invocation is not under the caller's span")
	}
	if helper[0].Parent().SpanID() != tool[0].SpanContext().SpanID() {
		t.Errorf("child invocation's parent is %v; want the delegate action's span", helper[0].Parent().SpanID())
	}
	wantAttrs(t, helper[0], map[string]any{"polyloop.run_id": polyloop.ChildRunID(polyloop.ParentRef{RunID: "run-parent", Step: 1, Index: 1})})
	for _, s := range sr.Ended() {
		if s.SpanContext().TraceID() != root.SpanContext().TraceID() {
			t.Errorf("%s is in another trace", s.Name())
		}
	}
	// The reception is written before the step record of the action.
	if evs := boss[0].Events(); len(evs) != 3 || evs[0].Name != "polyloop.child_received" || evs[1].Name != "polyloop.step_completed" {
		t.Errorf("parent invocation events %v; want child_received, then two step_completed", evs)
	}
}

// A fork's trace holds what the fork did: a chat span for each of its own
// model calls, whose usage sums to its totals, and for each copied step a
// polyloop.step_copied event on the invocation — no span re-billing the
// source's calls.
func TestE2EForkTracesItsOwnCalls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := memstore.New()
	turns := []scriptmodel.Turn{scriptmodel.Call("c1", "lookup", map[string]string{"k": "a"}),
		scriptmodel.Call("c2", "lookup", map[string]string{"k": "b"}), scriptmodel.Reply("done")}
	srcSink, _ := recorder(otelsink.Options{})
	if _, err := e2eRunner(store, scriptmodel.New(turns...), srcSink).Run(ctx, "src", e2eAgent, polyloop.Task{Input: "look it up"}); err != nil {
		t.Fatal(err)
	}
	sink, sr := recorder(otelsink.Options{})
	res, err := e2eRunner(store, scriptmodel.New(turns...), sink).Fork(ctx, "src", 2, "f", e2eAgent)
	if err != nil {
		t.Fatal(err)
	}
	spans := byName(sr.Ended())
	var tokens int64
	for _, s := range spans["chat script-1"] {
		for _, kv := range s.Attributes() {
			if kv.Key == "gen_ai.usage.input_tokens" || kv.Key == "gen_ai.usage.output_tokens" {
				tokens += kv.Value.AsInt64()
			}
		}
	}
	if len(spans["chat script-1"]) != 1 || tokens != res.Totals.Tokens() || len(spans["execute_tool lookup"]) != 0 {
		t.Fatalf("spans %v with %d tokens; the fork made 1 call of %d tokens and ran no action", names(sr.Ended()), tokens, res.Totals.Tokens())
	}
	copied := 0
	for _, e := range spans["invoke_agent e2e"][0].Events() {
		if e.Name == "polyloop.step_copied" {
			copied++
		}
	}
	if copied != 2 {
		t.Fatalf("%d polyloop.step_copied events, want 2", copied)
	}
}
