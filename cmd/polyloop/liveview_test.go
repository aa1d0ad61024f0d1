package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/agentfile"
	"github.com/polyloop/polyloop/internal/ssetest"
	"github.com/polyloop/polyloop/polylooptest"
	"github.com/polyloop/polyloop/sqlitestore"
	"github.com/polyloop/polyloop/view"
)

// streamedCall is one request to pacedSSE: the test writes its chunks.
type streamedCall struct {
	w    http.ResponseWriter
	done chan bool // true: end the response; false: cut the connection
}

// pacedSSE is an OpenAI-compatible endpoint whose streamed answers the
// test writes chunk by chunk, so that it can look at the view between
// them.
type pacedSSE struct{ calls chan *streamedCall }

func (p *pacedSSE) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	c := &streamedCall{w: w, done: make(chan bool)}
	p.calls <- c
	if !<-c.done {
		panic(http.ErrAbortHandler) // the connection drops mid-stream
	}
}

func (c *streamedCall) chunk(t *testing.T, delta map[string]any, finish any, usage any) {
	t.Helper()
	choices := []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}
	if usage != nil {
		choices = []any{}
	}
	b, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": choices, "usage": usage})
	fmt.Fprintf(c.w, "data: %s\n\n", b)
	c.w.(http.Flusher).Flush()
}

func (c *streamedCall) text(t *testing.T, s string) {
	t.Helper()
	c.chunk(t, map[string]any{"content": s}, nil, nil)
}

func (c *streamedCall) finish(t *testing.T) {
	t.Helper()
	c.chunk(t, map[string]any{}, "stop", nil)
	c.chunk(t, nil, nil, map[string]any{"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14})
	fmt.Fprint(c.w, "data: [DONE]\n\n")
	c.done <- true
}

func (p *pacedSSE) next(t *testing.T) *streamedCall {
	t.Helper()
	select {
	case c := <-p.calls:
		return c
	case <-time.After(20 * time.Second):
		t.Fatal("the model was not called")
		return nil
	}
}

// TestRunServesTheLiveView: polyloop run --view serves the view from the
// process that runs, with the model's text as the OpenAI client streams
// it: on the run's live stream before the reply is recorded, the attempt
// cut mid-stream superseded when the client retries, the retried
// attempt's text alone, then the recorded reply and the end.
func TestRunServesTheLiveView(t *testing.T) {
	dir := t.TempDir()
	model := &pacedSSE{calls: make(chan *streamedCall)}
	api := httptest.NewServer(model)
	defer api.Close()
	agent := filepath.Join(dir, "agent.yaml")
	if err := os.WriteFile(agent, []byte(fmt.Sprintf("name: live\nmodel: {provider: openai, model: m, base_url: %q, retries: 1}\nlimits: {max_steps: 3}\n", api.URL+"/v1/")), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr lockedBuf
	exit := make(chan int, 1)
	go func() {
		exit <- execute([]string{"--store", "sqlite:" + filepath.Join(dir, "polyloop.db"), "run", agent, "Greet the world.", "--id", "r1", "--view", "127.0.0.1:0", "-q"},
			strings.NewReader(""), &stdout, &stderr)
	}()
	first := model.next(t)
	page := regexp.MustCompile(`polyloop view: (http://127\.0\.0\.1:\d+)/run\?id=r1 `).FindStringSubmatch(stderr.String())
	if page == nil {
		t.Fatalf("run --view printed no page: %s", stderr.String())
	}
	base := page[1]
	first.text(t, "Hel")
	first.text(t, "lo")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events := liveEvents(t, ctx, base+"/live?id=r1&seq=0")
	text := func(what string, want view.Preview) {
		t.Helper()
		for {
			e, ok := <-events
			if !ok {
				t.Fatalf("the stream ended before %s", what)
			}
			if e.Name != "preview" {
				continue
			}
			var p view.Preview
			if err := json.Unmarshal([]byte(e.Data), &p); err != nil {
				t.Fatal(err)
			}
			if p.Text != "" && want.Text != "" && strings.HasPrefix(want.Text, p.Text) && p.Text != want.Text {
				want.Text = strings.TrimPrefix(want.Text, p.Text) // the text came in fragments
				continue
			}
			if p.CallID != want.CallID || p.Attempt != want.Attempt || p.Text != want.Text || p.Superseded != want.Superseded {
				t.Fatalf("%s: preview %+v, want %+v", what, p, want)
			}
			return
		}
	}
	text("the streamed text", view.Preview{CallID: "m1.1", Attempt: 1, Text: "Hello"})
	res, err := http.Get(base + "/run?id=r1")
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	_, _ = body.ReadFrom(res.Body)
	res.Body.Close()
	if !strings.Contains(body.String(), `<pre class="preview" data-call="m1.1"`) || strings.Contains(body.String(), `<span class="label">reply</span>`) {
		t.Fatalf("while the call streams, the run's page shows a reply or no preview:\n%s", body.String())
	}
	running := fmt.Sprintf(`<span class="badge running" id="running">running</span> (pid %d on `, os.Getpid())
	if !strings.Contains(body.String(), running) || strings.Contains(body.String(), "resume would") || strings.Contains(body.String(), "unknown outcome") {
		t.Fatalf("while the call streams, the run's own page does not say it is running (%s), or shows a resume plan or an unknown outcome:\n%s", running, body.String())
	}

	first.done <- false // cut mid-stream: the client retries
	second := model.next(t)
	text("the cut attempt", view.Preview{CallID: "m1.1", Attempt: 1, Superseded: true})
	second.text(t, "World")
	text("the retried attempt", view.Preview{CallID: "m1.1", Attempt: 2, Text: "World"})
	second.finish(t)
	var steps strings.Builder
	for e := range events {
		switch e.Name {
		case "steps":
			steps.WriteString(e.Data)
		case "preview":
			t.Errorf("a preview after the reply: %s", e.Data)
		}
		if e.Name == "end" {
			break
		}
	}
	if !strings.Contains(steps.String(), `<span class="label">reply</span><pre class="text">World</pre>`) {
		t.Errorf("the recorded reply did not reach the page:\n%s", steps.String())
	}
	if code := <-exit; code != exitOK || !strings.Contains(stdout.String(), "run r1: completed") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout.String(), stderr.String())
	}
}

// TestResumeServesTheLiveView: polyloop resume --view serves the view of
// the run it continues: the call made again streams on the page.
func TestResumeServesTheLiveView(t *testing.T) {
	dir := t.TempDir()
	model := &pacedSSE{calls: make(chan *streamedCall)}
	api := httptest.NewServer(model)
	defer api.Close()
	agent := filepath.Join(dir, "agent.yaml")
	if err := os.WriteFile(agent, []byte(fmt.Sprintf("name: live\nmodel: {provider: openai, model: m, base_url: %q}\nlimits: {max_steps: 3}\n", api.URL+"/v1/")), 0o644); err != nil {
		t.Fatal(err)
	}
	// A run killed while its model call was under way: the call's intent
	// without its result.
	path := filepath.Join(dir, "polyloop.db")
	st, err := sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := agentfile.Load(context.Background(), agent, nil)
	if err != nil {
		t.Fatal(err)
	}
	go func() { // the killed run's call answers; its result is lost
		select {
		case c := <-model.calls:
			c.text(t, "lost")
			c.finish(t)
		case <-time.After(20 * time.Second):
		}
	}()
	if _, err := cfg.Runner(&polylooptest.FaultyStore{Store: st, CrashAfter: 2}).Run(context.Background(), "r2", cfg.Agent, polyloop.Task{Input: "Greet."}); !errors.Is(err, polylooptest.ErrCrashed) {
		t.Fatalf("the run to kill: %v", err)
	}
	cfg.Close()
	st.Close()

	var stdout, stderr lockedBuf
	exit := make(chan int, 1)
	go func() {
		exit <- execute([]string{"--store", "sqlite:" + path, "resume", "r2", "--agent", agent, "--view", "127.0.0.1:0", "-q"}, strings.NewReader(""), &stdout, &stderr)
	}()
	call := model.next(t)
	page := regexp.MustCompile(`polyloop view: (http://127\.0\.0\.1:\d+)/run\?id=r2 `).FindStringSubmatch(stderr.String())
	if page == nil {
		t.Fatalf("resume --view printed no page: %s", stderr.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events := liveEvents(t, ctx, page[1]+"/live?id=r2&seq=0")
	call.text(t, "again")
	for e := range events {
		if e.Name == "preview" {
			var p view.Preview
			_ = json.Unmarshal([]byte(e.Data), &p)
			if p.CallID != "m1.2" || p.Text != "again" {
				t.Fatalf("preview %+v, want the text of m1.2, the call made again", p)
			}
			break
		}
	}
	call.finish(t)
	if code := <-exit; code != exitOK {
		t.Fatalf("resume: exit %d\n%s", code, stderr.String())
	}
}

// TestViewFlagRefusesABadAddress: a --view that cannot listen is an error
// before the run starts.
func TestViewFlagRefusesABadAddress(t *testing.T) {
	dir := t.TempDir()
	agent := filepath.Join(dir, "agent.yaml")
	if err := os.WriteFile(agent, []byte("name: a\nmodel: {provider: script, script: [{text: done}]}\nlimits: {max_steps: 3}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	store := "sqlite:" + filepath.Join(dir, "polyloop.db")
	code := execute([]string{"--store", store, "run", agent, "task", "--id", "r1", "--view", "256.0.0.1:1", "-q"}, strings.NewReader(""), &stdout, &stderr)
	if code != exitError || !strings.Contains(stderr.String(), "--view 256.0.0.1:1") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	stdout.Reset()
	if code := execute([]string{"--store", store, "ls"}, strings.NewReader(""), &stdout, &stderr); code != exitOK || strings.Contains(stdout.String(), "r1") {
		t.Fatalf("a run was started: exit %d, %s", code, stdout.String())
	}
}

// liveEvents reads a live stream's events as they come.
func liveEvents(t *testing.T, ctx context.Context, url string) <-chan ssetest.Event {
	t.Helper()
	events, err := ssetest.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	return events
}
