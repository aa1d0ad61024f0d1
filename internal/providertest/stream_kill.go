package providertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/provider"
	"github.com/polyloop/polyloop/slogsink"
	"github.com/polyloop/polyloop/sqlitestore"
	"github.com/polyloop/polyloop/toolcallparser"
)

// childEnv makes the test binary the child process of
// TestKilledStreamResumes; its value is the child's job, as JSON.
const childEnv = "POLYLOOP_PROVIDERTEST_STREAM_CHILD"

// childJob is what the child runs: run-1 of the weather agent against the
// fake server at BaseURL, stored in the SQLite file Store, its events as
// JSON lines (slogsink at DEBUG) appended to Events.
type childJob struct{ BaseURL, Store, Events string }

// killWithin bounds the wait for the child's first delta.
const killWithin = 30 * time.Second

// TestKilledStreamResumes starts a run in a child process (this test
// binary again) whose model call streams, kills it with SIGKILL once its
// event log has a delta, and resumes the run in this process with a new
// Runner and client. It checks that the event log — one file of JSON lines
// across both processes — shows, after run_resumed, the killed call
// superseded before anything of the new call, and deltas of the new call
// only; it returns the log's events, one line each. The child runs when
// the test binary runs with childEnv set: the test then never returns (it
// is killed).
func TestKilledStreamResumes[P provider.Package](t *testing.T, h Harness[P]) string {
	if raw := os.Getenv(childEnv); raw != "" {
		h.runChild(t, raw)
		return ""
	}
	dir := t.TempDir()
	srv := h.Serve(t, Response{SSE: h.OK.SSE, StallAfter: h.Stream.FirstDelta}, Response{SSE: h.Stream.Other})
	job := childJob{BaseURL: srv.URL(), Store: filepath.Join(dir, "runs.db"), Events: filepath.Join(dir, "events.jsonl")}
	h.killChild(t, job)
	h.resume(t, job)
	lines := readEventLog(t, job.Events)
	checkResumedPreviews(t, lines)
	var out []string
	for _, l := range lines {
		out = append(out, renderLine(l))
	}
	return strings.Join(out, "\n") + "\n"
}

// killChild runs job in a child process and kills it at its first delta.
func (h *Harness[P]) killChild(t *testing.T, job childJob) {
	raw, _ := json.Marshal(job)
	cmd := exec.Command(os.Args[0], "-test.run="+runPattern(t.Name()), "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+string(raw))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() { _ = cmd.Process.Kill() }()
	deadline := time.After(killWithin)
	for !fileHas(job.Events, `"msg":"model_delta"`) {
		select {
		case err := <-exited:
			t.Fatalf("the child exited (%v) before streaming a delta:\n%s", err, out.Bytes())
		case <-deadline:
			t.Fatalf("no delta in the child's event log after %v:\n%s", killWithin, out.Bytes())
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
}

// runChild is the child: it runs the job until it is killed.
func (h *Harness[P]) runChild(t *testing.T, raw string) {
	var job childJob
	if err := json.Unmarshal([]byte(raw), &job); err != nil {
		t.Fatal(err)
	}
	r, closeAll := h.runner(t, job)
	defer closeAll()
	_, err := r.Run(context.Background(), "run-1", h.WeatherAgent("get_weather"), polyloop.Task{Input: "Who are you?"})
	t.Fatalf("the child's run returned (%v): it should have been killed mid-stream", err)
}

// resume resumes the job's run in this process.
func (h *Harness[P]) resume(t *testing.T, job childJob) {
	r, closeAll := h.runner(t, job)
	defer closeAll()
	res, err := r.Resume(context.Background(), "run-1", h.WeatherAgent("get_weather"))
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("resume: %+v, %v", res, err)
	}
}

// runner is a Runner of job with a fresh client; closeAll closes its store
// and event log.
func (h *Harness[P]) runner(t *testing.T, job childJob) (*polyloop.Runner, func()) {
	st, err := sqlitestore.Open(job.Store, nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(job.Events, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	sink := slogsink.New(slog.New(slog.NewJSONHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug})), slogsink.Options{})
	agent := h.WeatherAgent("get_weather")
	r := &polyloop.Runner{Model: h.must(t, Options{BaseURL: job.BaseURL, APIKey: "test-key"}),
		Parser: toolcallparser.New(toolcallparser.Options{Tools: agent.Tools}), Executor: WeatherExec{Tool: "get_weather"},
		Store: st, Sinks: []polyloop.EventSink{sink}}
	return r, func() { _ = st.Close(); _ = f.Close() }
}

// runPattern is the -test.run pattern that runs the test named name only.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

func fileHas(path, s string) bool {
	b, err := os.ReadFile(path)
	return err == nil && bytes.Contains(b, []byte(s))
}

// readEventLog parses a file of JSON lines.
func readEventLog(t *testing.T, path string) []map[string]any {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []map[string]any
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		lines = append(lines, m)
	}
	return lines
}

// checkResumedPreviews checks the previews of a resumed run's event log:
// after run_resumed, the killed call (m1.1) is superseded before any event
// of the new call (m1.2), and every delta is the new call's.
func checkResumedPreviews(t *testing.T, lines []map[string]any) {
	t.Helper()
	resumed, superseded := false, false
	for i, l := range lines {
		kind, call := l["msg"], l["call_id"]
		switch {
		case kind == "run_resumed":
			resumed = true
		case !resumed:
		case kind == "candidate_superseded" && call == "m1.1":
			superseded = true
		case call == "m1.2" && !superseded:
			t.Errorf("event %d (%s of m1.2) comes before the killed call m1.1 is superseded", i, kind)
		case kind == "model_delta" && call != "m1.2":
			t.Errorf("event %d: after the resume, a delta of %v", i, call)
		}
	}
	if !resumed || !superseded {
		t.Errorf("the event log has no run_resumed (%v) or no superseded killed call (%v)", resumed, superseded)
	}
}

// renderLine is a line of the event log as renderEvent renders an event.
func renderLine(l map[string]any) string {
	s := fmt.Sprint(l["msg"])
	if call, ok := l["call_id"]; ok {
		s += fmt.Sprintf(" %v", call)
	}
	if attempt, ok := l["attempt"]; ok {
		s += fmt.Sprintf(" attempt %v", attempt)
	}
	d, _ := l["delta"].(map[string]any)
	switch l["msg"] {
	case "model_delta":
		s += fmt.Sprintf(" client %v text %q", d["attempt"], fmt.Sprint(d["text"]))
	case "candidate_superseded":
		if d == nil {
			s += " (the call is made again)"
		} else {
			s += fmt.Sprintf(" client %v", d["attempt"])
		}
	case "run_resumed":
		s += fmt.Sprintf(" %v", l["plan"].(map[string]any)["action"])
	case "model_call_finished":
		r, _ := l["reply"].(map[string]any)
		s += fmt.Sprintf(" reply %q attempts %v usage in %v out %v", fmt.Sprint(r["text"]), r["attempts"], r["input_tokens"], r["output_tokens"])
	case "step_completed":
		s += fmt.Sprintf(" %v", l["step_record"].(map[string]any)["decision"])
	case "run_finished":
		t, _ := l["totals"].(map[string]any)
		s += fmt.Sprintf(" %v %v calls, %v unknown calls", l["stop_reason"], t["model_calls"], t["unknown_model_calls"])
	}
	return s
}
