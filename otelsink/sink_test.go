package otelsink_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/diag"
	"github.com/polyloop/polyloop/otelsink"
)

func completedRun(runID string) *script {
	return newScript(runID).started().
		modelCall(1, 1).
		reply(1, 1, polyloop.ModelReply{Model: "gpt-test-2026", FinishReason: "tool_calls",
			Usage: polyloop.Usage{InputTokens: 10, OutputTokens: 5, CachedTokens: 4, CostUSD: new(0.01)}, Attempts: 2}).
		action(1, 1, toolCall("search", "call_1", `{"q":"x"}`)).
		outcome(1, polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "found it"}, "").
		modelCall(2, 1).
		reply(2, 1, polyloop.ModelReply{Model: "gpt-test-2026", FinishReason: "stop",
			Usage: polyloop.Usage{InputTokens: 20, OutputTokens: 7}}).
		final(2, "42").
		finished(polyloop.StopCompleted, "42")
}

func TestRunSpans(t *testing.T) {
	t.Parallel()
	sink, sr := recorder(otelsink.Options{})
	sc := completedRun("run-1")
	emitAll(t, context.Background(), sink, sc.evs)

	spans := byName(sr.Ended())
	if len(sr.Ended()) != 4 || len(spans["invoke_agent researcher"]) != 1 ||
		len(spans["chat gpt-test"]) != 2 || len(spans["execute_tool search"]) != 1 {
		t.Fatalf("spans: %v", names(sr.Ended()))
	}
	inv := spans["invoke_agent researcher"][0]
	if anchor := otelsink.RunAnchor("run-1"); !inv.Parent().Equal(anchor) || inv.SpanContext().TraceID() != anchor.TraceID() {
		t.Errorf("invoke_agent parent %v; want the run's anchor %v, a remote parent", inv.Parent(), anchor)
	}
	if inv.SpanKind() != trace.SpanKindInternal || inv.Status().Code != codes.Unset {
		t.Errorf("invoke_agent kind %v status %v", inv.SpanKind(), inv.Status())
	}
	if !inv.StartTime().Equal(sc.evs[0].At) || !inv.EndTime().Equal(sc.evs[len(sc.evs)-1].At) {
		t.Errorf("invoke_agent times %v..%v; want the events' At", inv.StartTime(), inv.EndTime())
	}
	wantAttrs(t, inv, map[string]any{
		"gen_ai.operation.name":        "invoke_agent",
		"gen_ai.agent.name":            "researcher",
		"gen_ai.conversation.id":       "run-1",
		"gen_ai.provider.name":         "openai",
		"gen_ai.request.model":         "gpt-test",
		"polyloop.run_id":              "run-1",
		"polyloop.seq":                 int64(0),
		"polyloop.end_seq":             int64(8),
		"polyloop.snapshot_hash":       "sha256:abc",
		"polyloop.invocation":          "run",
		"polyloop.stop_reason":         "completed",
		"polyloop.totals.steps":        int64(2),
		"polyloop.totals.input_tokens": int64(30),
	})
	// The parent is the anchor: a link to it too would make backends read
	// the parent reference as FOLLOWS_FROM.
	wantLinks(t, inv, map[string]trace.SpanContext{})
	for _, s := range sr.Ended()[:3] {
		if s.Parent().SpanID() != inv.SpanContext().SpanID() || s.SpanContext().TraceID() != inv.SpanContext().TraceID() {
			t.Errorf("%s: parent %v, want the invoke_agent span", s.Name(), s.Parent().SpanID())
		}
	}
	chat := spans["chat gpt-test"][0]
	if chat.SpanKind() != trace.SpanKindClient || chat.Status().Code != codes.Unset {
		t.Errorf("chat kind %v status %v", chat.SpanKind(), chat.Status())
	}
	if !chat.StartTime().Equal(sc.evs[2].At) || !chat.EndTime().Equal(sc.evs[3].At) {
		t.Errorf("chat times %v..%v; want model_call_started..finished", chat.StartTime(), chat.EndTime())
	}
	wantAttrs(t, chat, map[string]any{
		"gen_ai.operation.name":                "chat",
		"server.address":                       "llm.example",
		"server.port":                          int64(8443),
		"gen_ai.provider.name":                 "openai",
		"gen_ai.request.model":                 "gpt-test",
		"gen_ai.request.temperature":           0.25,
		"gen_ai.request.seed":                  int64(7),
		"gen_ai.request.max_tokens":            int64(256),
		"gen_ai.response.model":                "gpt-test-2026",
		"gen_ai.response.finish_reasons":       []string{"tool_calls"},
		"gen_ai.usage.input_tokens":            int64(10),
		"gen_ai.usage.output_tokens":           int64(5),
		"gen_ai.usage.cache_read.input_tokens": int64(4),
		"polyloop.usage.cost_usd":              0.01,
		"polyloop.model.attempts":              int64(2),
		"polyloop.step":                        int64(1),
		"polyloop.seq":                         int64(1),
		"polyloop.end_seq":                     int64(2),
		"polyloop.call_id":                     "m1.1",
		"polyloop.attempt":                     int64(1),
	})
	tool := spans["execute_tool search"][0]
	if tool.SpanKind() != trace.SpanKindInternal || tool.Status().Code != codes.Unset {
		t.Errorf("execute_tool kind %v status %v", tool.SpanKind(), tool.Status())
	}
	wantAttrs(t, tool, map[string]any{
		"gen_ai.operation.name":          "execute_tool",
		"gen_ai.tool.name":               "search",
		"gen_ai.tool.type":               "function",
		"gen_ai.tool.description":        "Search the web.",
		"gen_ai.tool.call.id":            "call_1",
		"polyloop.action_id":             "a1",
		"polyloop.action.kind":           "tool",
		"polyloop.action.replay":         "replay_safe",
		"polyloop.action.status":         "executed",
		"polyloop.observation.synthetic": false,
		"polyloop.seq":                   int64(3),
		"polyloop.end_seq":               int64(4),
	})
	noAttrs(t, tool, "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "error.type")
	if evs := inv.Events(); len(evs) != 2 || evs[0].Name != "polyloop.step_completed" {
		t.Errorf("invoke_agent span events: %v", evs)
	}
}

func TestModelFailure(t *testing.T) {
	t.Parallel()
	sink, sr := recorder(otelsink.Options{})
	d := diag.From(fmt.Errorf("calling provider: %w", errors.New("503 overloaded")))
	sc := newScript("run-llm").started().modelCall(1, 1).modelFailed(1, 1, d).finished(polyloop.StopLLMError, "")
	emitAll(t, context.Background(), sink, sc.evs)

	spans := byName(sr.Ended())
	chat := spans["chat gpt-test"][0]
	if chat.Status().Code != codes.Error || chat.Status().Description != d.Message {
		t.Errorf("chat status %v; want Error %q", chat.Status(), d.Message)
	}
	wantAttrs(t, chat, map[string]any{"error.type": otelsink.ErrorTypeOther})
	noAttrs(t, chat, "gen_ai.usage.input_tokens", "gen_ai.response.model")
	if ev := chat.Events(); len(ev) != 1 || ev[0].Name != "exception" {
		t.Errorf("chat events %v; want one exception", ev)
	}
	inv := spans["invoke_agent researcher"][0]
	if inv.Status().Code != codes.Error {
		t.Errorf("invoke_agent status %v; want Error", inv.Status())
	}
	wantAttrs(t, inv, map[string]any{"error.type": "llm_error", "polyloop.stop_reason": "llm_error"})
}

func TestEnvError(t *testing.T) {
	t.Parallel()
	for _, content := range []bool{false, true} {
		sink, sr := recorder(otelsink.Options{IncludeContent: content})
		sc := newScript("run-env").started().modelCall(1, 1).reply(1, 1, polyloop.ModelReply{}).
			action(1, 1, toolCall("db", "", `{"sql":"select 1"}`)).
			outcome(1, polyloop.ActionOutcome{Status: polyloop.EnvError, Observation: "connection refused"}, polyloop.DefaultEnvError).
			finished(polyloop.StopEnvError, "")
		emitAll(t, context.Background(), sink, sc.evs)

		spans := byName(sr.Ended())
		tool := spans["execute_tool db"][0]
		if tool.Status().Code != codes.Error {
			t.Errorf("execute_tool status %v; want Error", tool.Status())
		}
		wantAttrs(t, tool, map[string]any{
			"error.type":                     "env_error",
			"polyloop.action.status":         "env_error",
			"polyloop.observation.synthetic": true,
			"gen_ai.tool.call.id":            "a1", // no provider call id: the library's action id
		})
		if content {
			// The audit channel: the executor's own text, not the synthetic one.
			wantAttrs(t, tool, map[string]any{"gen_ai.tool.call.result": "connection refused",
				"gen_ai.tool.call.arguments": `{"sql":"select 1"}`})
		} else {
			noAttrs(t, tool, "gen_ai.tool.call.result", "gen_ai.tool.call.arguments")
		}
		inv := spans["invoke_agent researcher"][0]
		if inv.Status().Code != codes.Error {
			t.Errorf("invoke_agent status %v; want Error", inv.Status())
		}
		wantAttrs(t, inv, map[string]any{"error.type": "env_error"})
	}
}

func TestNotExecutedAndCodeAction(t *testing.T) {
	t.Parallel()
	sink, sr := recorder(otelsink.Options{})
	sc := newScript("run-code").started().modelCall(1, 1).reply(1, 1, polyloop.ModelReply{}).
		action(1, 1, polyloop.Action{Lang: "bash", Code: "ls"}).
		outcome(1, polyloop.ActionOutcome{Status: polyloop.NotExecuted, Observation: "refused"}, polyloop.DefaultNotExecuted).
		finished(polyloop.StopMaxSteps, "")
	emitAll(t, context.Background(), sink, sc.evs)
	spans := byName(sr.Ended())
	tool := spans["execute_tool bash"]
	if len(tool) != 1 {
		t.Fatalf("spans %v; want an execute_tool span named for the code's language", names(sr.Ended()))
	}
	wantAttrs(t, tool[0], map[string]any{"polyloop.action.kind": "code", "polyloop.action.lang": "bash",
		"gen_ai.tool.name": "bash", "error.type": "not_executed"})
	// A code action is no declared tool: no tool type, and the description
	// of a declared tool that happens to be called bash is not its own.
	noAttrs(t, tool[0], "gen_ai.tool.type", "gen_ai.tool.description")
	chat := spans["chat gpt-test"][0]
	noAttrs(t, chat, "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens") // the reply reported no usage
	if tool[0].Status().Code != codes.Error {
		t.Errorf("not_executed status %v; want Error", tool[0].Status())
	}
	inv := spans["invoke_agent researcher"][0]
	if inv.Status().Code != codes.Unset {
		t.Errorf("max_steps is not a failure; status %v", inv.Status())
	}
	noAttrs(t, inv, "error.type")
}

func TestResumeLinks(t *testing.T) {
	t.Parallel()
	sink, sr := recorder(otelsink.Options{})
	sc := newScript("run-r").started().modelCall(1, 1).reply(1, 1, polyloop.ModelReply{}).
		action(1, 1, toolCall("fetch", "c1", `{}`))
	emitAll(t, context.Background(), sink, sc.evs)
	sink.EndRun("run-r", fmt.Errorf("run: %w", context.Canceled))

	first := byName(sr.Ended())
	inv1 := first["invoke_agent researcher"][0]
	if inv1.Status().Code != codes.Error {
		t.Errorf("aborted invocation status %v; want Error", inv1.Status())
	}
	wantAttrs(t, inv1, map[string]any{"error.type": "canceled"})
	tool1 := first["execute_tool fetch"][0]
	wantAttrs(t, tool1, map[string]any{"error.type": "canceled"}) // the cause, as its parent says
	if tool1.Status().Code != codes.Error || tool1.Status().Description != inv1.Status().Description {
		t.Errorf("in-flight tool status %v; want its parent's %v", tool1.Status(), inv1.Status())
	}

	plan := polyloop.ResumePlan{Action: polyloop.PlanReplayAction, Step: 1, Attempt: 2, Reason: "replay", LastSeq: 3}
	sc.evs = nil
	sc.resumed(plan).action(1, 2, toolCall("fetch", "c1", `{}`)).
		outcome(1, polyloop.ActionOutcome{Status: polyloop.Executed, Done: true}, "").
		finished(polyloop.StopCompleted, "")
	emitAll(t, context.Background(), sink, sc.evs)

	all := byName(sr.Ended())["invoke_agent researcher"]
	if len(all) != 2 {
		t.Fatalf("spans %v; want two invocations", names(sr.Ended()))
	}
	inv2 := all[1]
	wantAttrs(t, inv2, map[string]any{"polyloop.invocation": "resume", "polyloop.resume.plan": "replay_action",
		"polyloop.resume.last_seq": int64(3), "polyloop.seq": int64(3)})
	wantLinks(t, inv2, map[string]trace.SpanContext{
		otelsink.LinkPreviousInvocation: inv1.SpanContext(),
	})
	anchor := otelsink.RunAnchor("run-r")
	for _, inv := range all {
		if inv.SpanContext().TraceID() != anchor.TraceID() || !inv.Parent().Equal(anchor) {
			t.Errorf("invocation %v: parent %v; want the run's anchor, so both invocations share its trace", inv.SpanContext(), inv.Parent())
		}
	}
	tool2 := byName(sr.Ended())["execute_tool fetch"][1]
	if tool2.Parent().SpanID() != inv2.SpanContext().SpanID() {
		t.Errorf("replayed tool span's parent is not the resumed invocation")
	}
	wantAttrs(t, tool2, map[string]any{"polyloop.attempt": int64(2)})

	// Another process sees only the resume: the anchor still puts it in the
	// run's trace.
	other, sr2 := recorder(otelsink.Options{})
	emitAll(t, context.Background(), other, sc.evs)
	elsewhere := sr2.Ended()[len(sr2.Ended())-1]
	wantLinks(t, elsewhere, map[string]trace.SpanContext{})
	if !elsewhere.Parent().Equal(anchor) {
		t.Errorf("the resume in another process has parent %v; want the anchor", elsewhere.Parent())
	}
	if elsewhere.SpanContext().TraceID() != inv1.SpanContext().TraceID() {
		t.Errorf("the resume in another process is in trace %v; want the run's %v", elsewhere.SpanContext().TraceID(), inv1.SpanContext().TraceID())
	}
}

// TestSamplingKeepsRunsWhole: a sampler that decides on the trace id keeps
// or drops every invocation of a run together, since they share the
// anchor's trace id.
func TestSamplingKeepsRunsWhole(t *testing.T) {
	t.Parallel()
	sr := tracetest.NewSpanRecorder()
	sampler := sdktrace.ParentBased(sdktrace.NeverSample(), sdktrace.WithRemoteParentSampled(sdktrace.TraceIDRatioBased(0.5)))
	sink := otelsink.New(otelsink.Options{TracerProvider: sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sampler), sdktrace.WithSpanProcessor(sr))})
	const runs = 16
	for i := range runs {
		id := fmt.Sprintf("run-s%02d", i)
		sc := newScript(id).started().modelCall(1, 1)
		emitAll(t, context.Background(), sink, sc.evs)
		sink.EndRun(id, context.Canceled)
		sc.evs = nil
		sc.resumed(polyloop.ResumePlan{Action: polyloop.PlanRetryModelCall, Step: 1, Attempt: 2, LastSeq: 1}).
			modelCall(1, 2).reply(1, 2, polyloop.ModelReply{Text: "ok"}).final(1, "ok").finished(polyloop.StopCompleted, "ok")
		emitAll(t, context.Background(), sink, sc.evs)
	}
	perRun := map[string]int{}
	for _, s := range sr.Ended() {
		perRun[attrsOf(s)["polyloop.run_id"].AsString()]++
	}
	for run, n := range perRun {
		if n != 4 { // two invocations, two chats
			t.Errorf("%s: %d spans recorded; want all 4 or none", run, n)
		}
	}
	if len(perRun) == 0 || len(perRun) == runs {
		t.Errorf("%d of %d runs sampled; a ratio of 0.5 should keep some and drop some", len(perRun), runs)
	}
}

// TestSinkAddedMidRun: events of a run whose start the sink never saw
// become spans in the run's trace, under its anchor.
func TestSinkAddedMidRun(t *testing.T) {
	t.Parallel()
	sink, sr := recorder(otelsink.Options{})
	sc := completedRun("run-mid")
	emitAll(t, context.Background(), sink, sc.evs[2:]) // from model_call_started of step 1
	anchor := otelsink.RunAnchor("run-mid")
	spans := byName(sr.Ended())
	if len(spans["chat"]) != 2 || len(spans["execute_tool search"]) != 1 || len(sr.Ended()) != 3 {
		t.Fatalf("spans %v; want two chat spans (no model known) and the tool span", names(sr.Ended()))
	}
	for _, s := range sr.Ended() {
		if !s.Parent().Equal(anchor) {
			t.Errorf("%s: parent %v; want the run's anchor", s.Name(), s.Parent())
		}
	}
}

// TestConfigOverrideUpdatesSpans: after config_overridden, chat and
// execute_tool spans describe the new snapshot.
func TestConfigOverrideUpdatesSpans(t *testing.T) {
	t.Parallel()
	sink, sr := recorder(otelsink.Options{})
	snap := *testSnapshot()
	snap.Model.Model = "gpt-other"
	snap.Tools = []polyloop.ToolSpec{{Name: "search", Description: "Search the intranet."}}
	snap.ModelClient.Config = json.RawMessage(`{"base_url":"http://10.0.0.7/v1"}`)
	sc := newScript("run-o").started().overridden(snap).modelCall(1, 1).
		reply(1, 1, polyloop.ModelReply{Usage: polyloop.Usage{InputTokens: 3}}).
		action(1, 1, toolCall("search", "c1", `{}`)).
		outcome(1, polyloop.ActionOutcome{Status: polyloop.Executed}, "")
	emitAll(t, context.Background(), sink, sc.evs)
	spans := byName(sr.Ended())
	if len(spans["chat gpt-other"]) != 1 || len(spans["execute_tool search"]) != 1 {
		t.Fatalf("spans %v", names(sr.Ended()))
	}
	wantAttrs(t, spans["chat gpt-other"][0], map[string]any{"gen_ai.request.model": "gpt-other",
		"server.address": "10.0.0.7", "server.port": int64(80),
		"gen_ai.usage.input_tokens": int64(3), "gen_ai.usage.output_tokens": int64(0)})
	wantAttrs(t, spans["execute_tool search"][0], map[string]any{"gen_ai.tool.description": "Search the intranet."})
}

func TestResumeOfFinishedRunEndsAtOnce(t *testing.T) {
	t.Parallel()
	sink, sr := recorder(otelsink.Options{})
	sc := newScript("run-f").resumed(polyloop.ResumePlan{Action: polyloop.PlanAlreadyFinished, LastSeq: 9})
	emitAll(t, context.Background(), sink, sc.evs)
	if len(sr.Ended()) != 1 || sr.Ended()[0].Status().Code != codes.Unset {
		t.Fatalf("ended %v", names(sr.Ended()))
	}
	if len(sr.Started()) != 1 {
		t.Errorf("started %d spans, want 1", len(sr.Started()))
	}
}

func TestParentFromContext(t *testing.T) {
	t.Parallel()
	sink, sr := recorder(otelsink.Options{})
	tp := sdktrace.NewTracerProvider()
	ctx, parent := tp.Tracer("app").Start(context.Background(), "request")
	defer parent.End()
	emitAll(t, ctx, sink, completedRun("run-p").evs)
	inv := byName(sr.Ended())["invoke_agent researcher"][0]
	if inv.Parent().SpanID() != parent.SpanContext().SpanID() || inv.SpanContext().TraceID() != parent.SpanContext().TraceID() {
		t.Errorf("invoke_agent parent %v; want the caller's span %v", inv.Parent(), parent.SpanContext())
	}
	// In the caller's trace, the link to the anchor joins the run's
	// invocations.
	wantLinks(t, inv, map[string]trace.SpanContext{otelsink.LinkRun: otelsink.RunAnchor("run-p")})
}

func TestCloseEndsOpenSpans(t *testing.T) {
	t.Parallel()
	sink, sr := recorder(otelsink.Options{})
	emitAll(t, context.Background(), sink, newScript("run-c").started().modelCall(1, 1).evs)
	if len(sr.Ended()) != 0 {
		t.Fatalf("spans ended before Close: %v", names(sr.Ended()))
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	if len(sr.Ended()) != 2 {
		t.Fatalf("Close ended %v; want chat and invoke_agent", names(sr.Ended()))
	}
	for _, s := range sr.Ended() {
		if s.Status().Code != codes.Error {
			t.Errorf("%s status %v; want Error", s.Name(), s.Status())
		}
		wantAttrs(t, s, map[string]any{"error.type": otelsink.ErrorTypeUnfinished})
	}
	sink.EndRun("run-c", nil) // nothing open: no effect
	if len(sr.Ended()) != 2 {
		t.Errorf("EndRun after Close ended more spans")
	}
}

func TestEmitErrors(t *testing.T) {
	t.Parallel()
	sink, sr := recorder(otelsink.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ev := newScript("run-e").started().evs[0]
	if err := sink.Emit(ctx, ev); !errors.Is(err, context.Canceled) {
		t.Errorf("Emit with a done context: %v; want context.Canceled", err)
	}
	ev.RunID = ""
	if err := sink.Emit(context.Background(), ev); !errors.Is(err, otelsink.ErrNoRunID) {
		t.Errorf("Emit without run id: %v; want ErrNoRunID", err)
	}
	if len(sr.Started()) != 0 {
		t.Errorf("refused events started spans")
	}
}

func TestConcurrentRuns(t *testing.T) {
	t.Parallel()
	sink, sr := recorder(otelsink.Options{})
	const runs = 16
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			for _, ev := range completedRun(fmt.Sprintf("run-%02d", i)).evs {
				if err := sink.Emit(context.Background(), ev); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	ended := sr.Ended()
	if len(ended) != 4*runs {
		t.Fatalf("%d spans; want %d", len(ended), 4*runs)
	}
	invokes := map[trace.SpanID]string{}
	for _, s := range ended {
		if s.Name() == "invoke_agent researcher" {
			invokes[s.SpanContext().SpanID()] = attrsOf(s)["polyloop.run_id"].AsString()
		}
	}
	for _, s := range ended {
		if s.Name() == "invoke_agent researcher" {
			continue
		}
		if got, want := invokes[s.Parent().SpanID()], attrsOf(s)["polyloop.run_id"].AsString(); got != want {
			t.Errorf("%s of %s has the invocation of %q as parent", s.Name(), want, got)
		}
	}
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

func wantAttrs(t *testing.T, s sdktrace.ReadOnlySpan, want map[string]any) {
	t.Helper()
	got := attrsOf(s)
	for k, w := range want {
		v, ok := got[attribute.Key(k)]
		if !ok {
			t.Errorf("%s: attribute %s missing", s.Name(), k)
			continue
		}
		if fmt.Sprint(v.AsInterface()) != fmt.Sprint(w) || fmt.Sprintf("%T", v.AsInterface()) != fmt.Sprintf("%T", w) {
			t.Errorf("%s: %s = %#v; want %#v", s.Name(), k, v.AsInterface(), w)
		}
	}
}

func noAttrs(t *testing.T, s sdktrace.ReadOnlySpan, keys ...string) {
	t.Helper()
	got := attrsOf(s)
	for _, k := range keys {
		if v, ok := got[attribute.Key(k)]; ok {
			t.Errorf("%s: unexpected attribute %s = %v", s.Name(), k, v.AsInterface())
		}
	}
}

// wantLinks checks the span's links by their polyloop.link.type.
func wantLinks(t *testing.T, s sdktrace.ReadOnlySpan, want map[string]trace.SpanContext) {
	t.Helper()
	got := map[string]trace.SpanContext{}
	for _, l := range s.Links() {
		var typ, run string
		for _, kv := range l.Attributes {
			switch kv.Key {
			case "polyloop.link.type":
				typ = kv.Value.AsString()
			case "polyloop.run_id":
				run = kv.Value.AsString()
			}
		}
		if run == "" {
			t.Errorf("%s: link %s without polyloop.run_id", s.Name(), typ)
		}
		got[typ] = l.SpanContext
	}
	if len(got) != len(want) {
		t.Errorf("%s: links %v; want %v", s.Name(), got, want)
	}
	for typ, sc := range want {
		if g := got[typ]; g.TraceID() != sc.TraceID() || g.SpanID() != sc.SpanID() {
			t.Errorf("%s: %s link to %v/%v; want %v/%v", s.Name(), typ, g.TraceID(), g.SpanID(), sc.TraceID(), sc.SpanID())
		}
	}
}
