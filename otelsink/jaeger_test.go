package otelsink_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/openaimodel"
	"github.com/polyloop/polyloop/otelsink"
	"github.com/polyloop/polyloop/sqlitestore"
	"github.com/polyloop/polyloop/toolcallparser"
)

// The Jaeger all-in-one the end-to-end trace test exports to: .ci/run builds
// and starts it (config .ci/jaeger.yaml) and sets both variables.
const (
	jaegerQueryEnv = "POLYLOOP_TEST_JAEGER_QUERY" // the query API, e.g. http://127.0.0.1:26686
	jaegerOTLPEnv  = "POLYLOOP_TEST_JAEGER_OTLP"  // OTLP/HTTP, e.g. http://127.0.0.1:24318
)

// Values that must never reach a span: the model's API key, and content
// (tool arguments, observations), which is off by default.
const (
	jaegerAPIKey     = "sk-polyloop-jaeger-4f3e2d1c0b9a8877"
	jaegerArgSecret  = "arg-7c6b5a4938271605"
	jaegerObsSecret  = "obs-f0e1d2c3b4a59687"
	jaegerTaskSecret = "task-0a1b2c3d4e5f6071"
)

// fakeOpenAI answers Chat Completions as a provider would: a tool call to
// lookup first, then, once the history has the tool's result, a final
// answer. With fail set, it answers 503 with a provider error.
func fakeOpenAI(t *testing.T, fail bool) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+jaegerAPIKey {
			http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if fail {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":{"message":"the engine is overloaded","type":"server_error","code":"engine_overloaded"}}`)
			return
		}
		msg := `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{\"key\":\"` + jaegerArgSecret + `\"}"}}]}`
		finish := "tool_calls"
		if strings.Contains(string(body), `"role":"tool"`) {
			msg, finish = `{"role":"assistant","content":"the value is known"}`, "stop"
		}
		fmt.Fprintf(w, `{"id":"cmpl-1","object":"chat.completion","created":1,"model":"gpt-test-2026","choices":[{"index":0,"message":%s,"finish_reason":%q}],"usage":{"prompt_tokens":11,"completion_tokens":3,"total_tokens":14}}`, msg, finish)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1/"
}

// secretLookup answers lookup with a secret. With hang set, it creates
// that file instead and blocks until the process dies.
type secretLookup struct{ hang string }

func (l secretLookup) Execute(_ context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	if l.hang != "" {
		if err := os.WriteFile(l.hang, nil, 0o644); err != nil {
			return polyloop.ActionOutcome{}, err
		}
		select {}
	}
	if a.Tool != "lookup" {
		return polyloop.ActionOutcome{Status: polyloop.NotExecuted, Observation: "no tool " + a.Tool}, nil
	}
	return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "found " + jaegerObsSecret}, nil
}

var jaegerAgent = polyloop.Agent{
	Name:   "jaeger-e2e",
	Tools:  []polyloop.ToolSpec{{Name: "lookup", Description: "Looks a key up.", Replay: polyloop.ReplaySafe}},
	Limits: polyloop.Limits{MaxSteps: 5},
	Model:  polyloop.ModelParams{Provider: "openai", Model: "gpt-test"},
}

// jaegerRun is one CLI-like process: a sink from the environment (as the
// CLI builds it), one Run or Resume, EndRun on error, then the flush.
func jaegerRun(t *testing.T, store polyloop.Store, baseURL string, do func(*polyloop.Runner) (polyloop.RunResult, error)) (polyloop.RunResult, error) {
	t.Helper()
	ctx := context.Background()
	sink, shutdown, err := otelsink.NewFromEnv(ctx)
	if err != nil || sink == nil {
		t.Fatalf("NewFromEnv: %v, %v", sink, err)
	}
	model, err := openaimodel.New(openaimodel.Options{APIKey: jaegerAPIKey, BaseURL: baseURL, Model: "gpt-test"})
	if err != nil {
		t.Fatal(err)
	}
	r := &polyloop.Runner{Model: model, Parser: toolcallparser.New(toolcallparser.Options{}), Executor: secretLookup{},
		Store: store, Sinks: []polyloop.EventSink{sink}}
	res, runErr := do(r)
	if runErr != nil {
		sink.EndRun(res.RunID, runErr)
	}
	if err := shutdown(ctx); err != nil {
		t.Fatalf("flushing the traces: %v", err)
	}
	return res, runErr
}

// TestJaeger exports runs to a real Jaeger (all-in-one v1.76.0, OTLP/HTTP,
// in-memory storage) through NewFromEnv, as the CLI does, and reads them
// back through Jaeger's query API: a run interrupted by a store crash and
// resumed in a second "process" is one trace with one root, both
// invocations its CHILD_OF children and no warnings on any span; so is a
// run whose first invocation, in a child process, is killed with SIGKILL
// mid-action; a run whose model fails shows the failure with a small
// error.type; the spans carry the GenAI attributes; no key and no content
// reached any of them.
func TestJaeger(t *testing.T) {
	query := os.Getenv(jaegerQueryEnv)
	if query == "" {
		t.Skipf("%s is not set: no Jaeger to export to (.ci/run starts one)", jaegerQueryEnv)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", os.Getenv(jaegerOTLPEnv))
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "")
	t.Setenv("OTEL_SDK_DISABLED", "")
	t.Setenv("OTEL_SERVICE_NAME", "polyloop-jaeger-test")
	ctx := context.Background()
	suffix := fmt.Sprint(time.Now().UnixNano())
	okURL, failURL := fakeOpenAI(t, false), fakeOpenAI(t, true)
	task := polyloop.Task{Input: "look up " + jaegerTaskSecret}

	// A run whose store dies after the action's intent, then its resume.
	resumed := "jaeger-resumed-" + suffix
	crashing := memstore.NewWithOptions(memstore.Options{CrashAfter: 4})
	_, err := jaegerRun(t, crashing, okURL, func(r *polyloop.Runner) (polyloop.RunResult, error) {
		return r.Run(ctx, resumed, jaegerAgent, task)
	})
	var perr *polyloop.PersistenceError
	if !errors.As(err, &perr) {
		t.Fatalf("the first invocation: %v, want a store failure", err)
	}
	log, err := polyloop.ReadLog(ctx, crashing, resumed)
	if err != nil {
		t.Fatal(err)
	}
	fresh := memstore.New()
	if err := polyloop.AppendRecords(ctx, fresh, resumed, log.Records...); err != nil {
		t.Fatal(err)
	}
	res, err := jaegerRun(t, fresh, okURL, func(r *polyloop.Runner) (polyloop.RunResult, error) {
		return r.Resume(ctx, resumed, jaegerAgent)
	})
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("resume: %v, %+v", err, res)
	}

	// A run whose first invocation is killed (SIGKILL, in another process,
	// nothing flushed at its end), then resumed here.
	killed := "jaeger-killed-" + suffix
	killedStore := killFirstInvocation(t, killed, okURL)
	res, err = jaegerRun(t, killedStore, okURL, func(r *polyloop.Runner) (polyloop.RunResult, error) {
		return r.Resume(ctx, killed, jaegerAgent)
	})
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("resume after SIGKILL: %v, %+v", err, res)
	}

	// A run whose model fails.
	failed := "jaeger-failed-" + suffix
	res, err = jaegerRun(t, memstore.New(), failURL, func(r *polyloop.Runner) (polyloop.RunResult, error) {
		return r.Run(ctx, failed, jaegerAgent, task)
	})
	if err != nil || res.StopReason != polyloop.StopLLMError {
		t.Fatalf("failing run: %v, %+v", err, res)
	}

	j := &jaeger{t: t, base: query}
	tr := j.trace(resumed, 7) // run, 2×invoke_agent, 2×chat, 2×execute_tool (the first one aborted)
	tr.wellFormed()
	tr.noSecrets()
	j.noWarningsV3(resumed)
	if n := len(j.tracesOf(resumed)); n != 1 {
		t.Errorf("run %s is in %d traces, want 1", resumed, n)
	}
	invs := tr.named("invoke_agent jaeger-e2e")
	if len(invs) != 2 {
		t.Fatalf("trace of %s has %d invoke_agent spans, want 2: %v", resumed, len(invs), tr.names())
	}
	root := tr.only("run jaeger-e2e")
	for _, inv := range invs {
		if ref := inv.parentRef(); ref.SpanID != root.SpanID || ref.RefType != "CHILD_OF" {
			t.Errorf("invocation %s: parent reference %+v, want CHILD_OF the run's root %s", inv.SpanID, ref, root.SpanID)
		}
		tr.wantTags(inv, map[string]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "jaeger-e2e",
			"gen_ai.conversation.id": resumed, "span.kind": "internal"})
	}
	resumedInv := invs[0]
	if resumedInv.tag("polyloop.invocation") != "resume" {
		resumedInv = invs[1]
	}
	tr.wantTags(resumedInv, map[string]string{"polyloop.invocation": "resume", "polyloop.stop_reason": "completed",
		"gen_ai.usage.input_tokens": "11", "polyloop.totals.input_tokens": "22"})
	for _, chat := range tr.named("chat gpt-test") {
		tr.wantTags(chat, map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
			"gen_ai.request.model": "gpt-test", "gen_ai.response.model": "gpt-test-2026", "gen_ai.usage.input_tokens": "11",
			"gen_ai.usage.output_tokens": "3", "span.kind": "client", "server.address": "127.0.0.1"})
	}
	for _, tool := range tr.named("execute_tool lookup") {
		tr.wantTags(tool, map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
			"gen_ai.tool.type": "function", "gen_ai.tool.description": "Looks a key up."})
	}

	// The killed invocation's spans never left its process, but the run's
	// root did, at run_started: the resumed invocation has its parent.
	kt := j.trace(killed, 4) // run, the resume's invoke_agent, execute_tool (the replay) and chat
	kt.wellFormed()
	kt.noSecrets()
	j.noWarningsV3(killed)
	kroot := kt.only("run jaeger-e2e")
	kinv := kt.only("invoke_agent jaeger-e2e")
	if ref := kinv.parentRef(); ref.SpanID != kroot.SpanID || ref.RefType != "CHILD_OF" || kinv.tag("polyloop.invocation") != "resume" {
		t.Errorf("the invocation after SIGKILL: parent %+v, %s; want the resume, CHILD_OF the run's root %s", ref, kinv.tag("polyloop.invocation"), kroot.SpanID)
	}

	ft := j.trace(failed, 3) // run, invoke_agent, chat
	ft.wellFormed()
	ft.noSecrets()
	j.noWarningsV3(failed)
	chat := ft.only("chat gpt-test")
	ft.wantTags(chat, map[string]string{"error.type": "engine_overloaded", "error": "true", "otel.status_code": "ERROR"})
	ft.wantTags(ft.only("invoke_agent jaeger-e2e"), map[string]string{"error.type": "llm_error", "polyloop.stop_reason": "llm_error"})
}

// jaeger reads traces from Jaeger's query API (/api/traces, v1 JSON).
type jaeger struct {
	t    *testing.T
	base string
}

type jTrace struct {
	t     *testing.T
	raw   string
	spans []jSpan
}

type jSpan struct {
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
	Warnings []string `json:"warnings"`
}

func (j *jaeger) get(path string, q url.Values) []byte {
	j.t.Helper()
	u := j.base + path
	if q != nil {
		u += "?" + q.Encode()
	}
	resp, err := http.Get(u)
	if err != nil {
		j.t.Fatalf("Jaeger query API: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotFound {
		j.t.Fatalf("GET %s: %s\n%s", u, resp.Status, body)
	}
	return body
}

// trace reads the run's trace (the id of its anchor), waiting until Jaeger
// has at least min spans of it (its ingestion is asynchronous).
func (j *jaeger) trace(runID string, min int) *jTrace {
	j.t.Helper()
	id := otelsink.RunAnchor(runID).TraceID().String()
	var tr *jTrace
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		raw := j.get("/api/traces/"+id, nil)
		var out struct {
			Data []struct {
				Spans []jSpan `json:"spans"`
			} `json:"data"`
		}
		if err := json.Unmarshal(raw, &out); err == nil && len(out.Data) == 1 {
			tr = &jTrace{t: j.t, raw: string(raw), spans: out.Data[0].Spans}
			if len(tr.spans) >= min {
				return tr
			}
		}
		if time.Now().After(deadline) {
			j.t.Fatalf("Jaeger has no trace %s with %d spans for run %s: %s", id, min, runID, raw)
		}
	}
}

// tracesOf finds the traces whose spans carry the run's id.
func (j *jaeger) tracesOf(runID string) []string {
	j.t.Helper()
	tags, _ := json.Marshal(map[string]string{"gen_ai.conversation.id": runID})
	raw := j.get("/api/traces", url.Values{"service": {"polyloop-jaeger-test"}, "tags": {string(tags)}, "limit": {"20"},
		"lookback": {"1h"}})
	var out struct {
		Data []struct {
			TraceID string `json:"traceID"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		j.t.Fatalf("search: %v\n%s", err, raw)
	}
	var ids []string
	for _, d := range out.Data {
		ids = append(ids, d.TraceID)
	}
	return ids
}

func (tr *jTrace) names() []string {
	var n []string
	for _, s := range tr.spans {
		n = append(n, s.OperationName)
	}
	return n
}

func (tr *jTrace) named(name string) []jSpan {
	var out []jSpan
	for _, s := range tr.spans {
		if s.OperationName == name {
			out = append(out, s)
		}
	}
	return out
}

func (tr *jTrace) only(name string) jSpan {
	tr.t.Helper()
	s := tr.named(name)
	if len(s) != 1 {
		tr.t.Fatalf("%d spans named %q, want 1: %v", len(s), name, tr.names())
	}
	return s[0]
}

// parentRef is the span's CHILD_OF reference, else its first one.
func (s jSpan) parentRef() (ref struct{ RefType, SpanID string }) {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return struct{ RefType, SpanID string }{r.RefType, r.SpanID}
		}
	}
	if len(s.References) > 0 {
		return struct{ RefType, SpanID string }{s.References[0].RefType, s.References[0].SpanID}
	}
	return ref
}

func (s jSpan) tag(key string) string {
	for _, kv := range s.Tags {
		if kv.Key == key {
			return fmt.Sprint(kv.Value)
		}
	}
	return ""
}

// wellFormed: one root (no references), every other span CHILD_OF a span
// of the trace, and no span with a warning about its parent. (The v1 API's
// clock-skew adjuster, which knows hosts only by a Jaeger "ip" process tag
// that OTLP does not carry, also notes that a resumed invocation starts
// after the root ended; the v3 API, which knows host.name, does not: see
// noWarningsV3.)
func (tr *jTrace) wellFormed() {
	tr.t.Helper()
	ids := map[string]bool{}
	for _, s := range tr.spans {
		ids[s.SpanID] = true
	}
	roots := 0
	for _, s := range tr.spans {
		for _, w := range s.Warnings {
			if strings.Contains(w, "parent") || strings.Contains(w, "duplicate") {
				tr.t.Errorf("span %s %s has the warning %q", s.OperationName, s.SpanID, w)
			}
		}
		if len(s.References) == 0 {
			roots++
			continue
		}
		if ref := s.parentRef(); ref.RefType != "CHILD_OF" || !ids[ref.SpanID] {
			tr.t.Errorf("span %s %s: parent reference %+v, want CHILD_OF a span of the trace", s.OperationName, s.SpanID, ref)
		}
	}
	if roots != 1 {
		t := tr.t
		t.Errorf("the trace has %d roots, want 1: %v", roots, tr.names())
	}
}

// noWarningsV3 reads the run's trace through the v3 query API (OTLP JSON,
// with Jaeger's warnings as the span attribute @jaeger@warnings) and fails
// on any warning.
func (j *jaeger) noWarningsV3(runID string) {
	j.t.Helper()
	raw := j.get("/api/v3/traces/"+otelsink.RunAnchor(runID).TraceID().String(), nil)
	var out struct {
		Result struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []struct {
						Name       string `json:"name"`
						Attributes []struct {
							Key   string `json:"key"`
							Value any    `json:"value"`
						} `json:"attributes"`
					} `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		} `json:"result"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		j.t.Fatalf("v3 trace: %v\n%s", err, raw)
	}
	n := 0
	for _, rs := range out.Result.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				n++
				for _, a := range s.Attributes {
					if strings.Contains(a.Key, "warning") {
						j.t.Errorf("v3: span %s has %s = %v", s.Name, a.Key, a.Value)
					}
				}
			}
		}
	}
	if n == 0 {
		j.t.Errorf("v3: no spans for run %s:\n%s", runID, raw)
	}
}

func (tr *jTrace) noSecrets() {
	tr.t.Helper()
	for _, s := range []string{jaegerAPIKey, jaegerArgSecret, jaegerObsSecret, jaegerTaskSecret} {
		if strings.Contains(tr.raw, s) {
			tr.t.Errorf("the trace holds %q", s)
		}
	}
}

func (tr *jTrace) wantTags(s jSpan, want map[string]string) {
	tr.t.Helper()
	for k, v := range want {
		if got := s.tag(k); got != v {
			tr.t.Errorf("%s %s: %s = %q, want %q", s.OperationName, s.SpanID, k, got, v)
		}
	}
}

// killFirstInvocation runs the first invocation of run id in a child
// process (TestMain's runUntilKilled) on a fresh SQLite file, kills it with
// SIGKILL once its action has started, and returns the store, opened here.
// Its span batches wait a minute before they go out, so that nothing but
// what the sink flushed itself leaves the killed process.
func killFirstInvocation(t *testing.T, id, modelURL string) polyloop.Store {
	t.Helper()
	dir := t.TempDir()
	db, marker := filepath.Join(dir, "runs.db"), filepath.Join(dir, "acting")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(exe)
	child.Env = append(os.Environ(), killedRunEnv+"="+id, killedStoreEnv+"="+db, killedModelEnv+"="+modelURL,
		killedMarkerEnv+"="+marker, "OTEL_BSP_SCHEDULE_DELAY=60000")
	var stderr strings.Builder
	child.Stderr = &stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = child.Process.Kill()
			_ = child.Wait()
			t.Fatalf("the first invocation never reached its action; its stderr:\n%s", stderr.String())
		}
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	st, err := sqlitestore.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
