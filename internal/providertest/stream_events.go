package providertest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/diag"
	"github.com/polyloop/polyloop/internal/golden"
	"github.com/polyloop/polyloop/internal/provider"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/toolcallparser"
)

// StreamEventsGolden is the golden file, under the client's
// testdata/golden, of the event sequences of streamed runs.
const StreamEventsGolden = "stream_events.txt"

// eventLines is an EventSink that renders each event as a line, and can
// cancel the run at its first delta.
type eventLines struct {
	mu          sync.Mutex
	lines       []string
	cancelFirst context.CancelFunc
}

// WantsDeltas implements polyloop.DeltaSink: the sequences show deltas.
func (s *eventLines) WantsDeltas() bool { return true }

func (s *eventLines) Emit(_ context.Context, ev polyloop.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = append(s.lines, renderEvent(ev))
	if ev.Kind == polyloop.EventModelDelta && s.cancelFirst != nil {
		s.cancelFirst()
		s.cancelFirst = nil
	}
	return nil
}

func (s *eventLines) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n") + "\n"
}

// renderEvent is an event on one line: its kind, call and attempt, and
// what a consumer of previews needs of it.
func renderEvent(ev polyloop.Event) string {
	s := string(ev.Kind)
	if ev.CallID != "" {
		s += " " + ev.CallID
	}
	if ev.Attempt != 0 {
		s += fmt.Sprintf(" attempt %d", ev.Attempt)
	}
	switch ev.Kind {
	case polyloop.EventRunResumed:
		s += " " + string(ev.Plan.Action)
	case polyloop.EventModelDelta:
		s += " " + renderDelta(ev.Delta)
	case polyloop.EventCandidateSuperseded:
		if ev.Delta == nil {
			s += " (the call is made again)"
		} else {
			s += fmt.Sprintf(" client %d", ev.Delta.Attempt)
		}
	case polyloop.EventModelCallFinished:
		s += renderResult(ev)
	case polyloop.EventStepCompleted:
		s += " " + string(ev.StepRecord.Decision)
	case polyloop.EventRunFinished:
		s += " " + string(ev.StopReason) + " " + renderTotals(ev.Totals)
	}
	return s
}

func renderDelta(d *polyloop.Delta) string {
	s := fmt.Sprintf("client %d", d.Attempt)
	if d.Text != "" {
		s += fmt.Sprintf(" text %q", d.Text)
	}
	if d.ToolCallID != "" || d.ToolName != "" || d.Args != "" {
		s += fmt.Sprintf(" tool_call %d", d.ToolCall)
		if d.ToolCallID != "" || d.ToolName != "" {
			s += fmt.Sprintf(" %s %s", d.ToolCallID, d.ToolName)
		}
		s += fmt.Sprintf(" args %q", d.Args)
	}
	return s
}

func renderResult(ev polyloop.Event) string {
	if ev.Failure != nil {
		s := " failed " + renderDiag(ev.Failure)
		if ev.Usage != nil {
			s += " usage " + renderUsage(*ev.Usage)
		}
		return s
	}
	r := ev.Reply
	s := fmt.Sprintf(" reply %q", r.Text)
	for _, tc := range r.ToolCalls {
		s += fmt.Sprintf(" call %s %s %s", tc.ID, tc.Name, tc.Args)
	}
	return s + fmt.Sprintf(" attempts %d usage %s", r.Attempts, renderUsage(r.Usage))
}

// renderDiag is a diagnostic's chain of types and fields, outermost
// first.
func renderDiag(d *diag.Diagnostic) string {
	keys := make([]string, 0, len(d.Fields))
	for k := range d.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var f []string
	for _, k := range keys {
		f = append(f, k+"="+d.Fields[k])
	}
	s := fmt.Sprintf("%s {%s}", d.Type, strings.Join(f, " "))
	if len(d.Causes) == 1 {
		s += " < " + renderDiag(&d.Causes[0])
	}
	return s
}

func renderUsage(u polyloop.Usage) string {
	c := "unknown"
	if u.CostUSD != nil {
		c = fmt.Sprintf("$%.6f", *u.CostUSD)
	}
	return fmt.Sprintf("in %d out %d cost %s", u.InputTokens, u.OutputTokens, c)
}

func renderTotals(t *polyloop.Totals) string {
	c := fmt.Sprintf("$%.6f", t.CostUSD)
	if t.CostUnknown {
		c += " (unknown)"
	}
	tok := fmt.Sprintf("%d+%d tokens", t.InputTokens, t.OutputTokens)
	if t.TokensUnknown {
		tok += " (unknown)"
	}
	return fmt.Sprintf("%d calls, %s, %s, %d unknown calls", t.ModelCalls, tok, c, t.UnknownModelCalls)
}

// streamScenario is a streamed run through the Runner: the server's
// script, the agent's retries, and whether the sink cancels the run at the
// first delta.
type streamScenario struct {
	name    string
	script  []Response
	retries int
	cancel  bool
}

// TestStreamEvents runs streamed runs through the Runner and compares the
// events its sink sees with the sections of testdata/golden/StreamEventsGolden
// (go test -rewrite rewrites them): a clean stream; a stream broken after
// some deltas, then retried; a rate-limit error event mid-stream, then a
// 429 with Retry-After, then a stream; an error event with no retry left;
// a run cancelled mid-stream (the stream is released); and a run killed
// mid-stream, then resumed (see TestKilledStreamResumes).
func TestStreamEvents[P provider.Package](t *testing.T, h Harness[P]) {
	s := h.Stream
	wait := map[string]string{"retry-after-ms": "5"}
	scenarios := []streamScenario{
		{name: "clean", script: []Response{h.OK}},
		{name: "broken_then_retried", retries: 1,
			script: []Response{{SSE: h.OK.SSE, CutAfter: s.CutAfter}, {SSE: s.Other}}},
		{name: "rate_limited_mid_stream", retries: 2,
			script: []Response{{SSE: s.RateLimited, Header: wait}, withHeader(h.RetryAfter150ms, wait), {SSE: s.Other}}},
		{name: "failed_mid_stream", script: []Response{{SSE: s.ServerError}}},
		{name: "cancelled", cancel: true, script: []Response{{SSE: h.OK.SSE, StallAfter: s.FirstDelta}}},
	}
	var mu sync.Mutex
	var sections []golden.Section
	t.Run("scenarios", func(t *testing.T) {
		for _, sc := range scenarios {
			t.Run(sc.name, func(t *testing.T) {
				t.Parallel()
				text := h.streamRun(t, sc)
				mu.Lock()
				defer mu.Unlock()
				sections = append(sections, golden.Section{Name: sc.name, Data: []byte(text)})
			})
		}
		t.Run("killed_and_resumed", func(t *testing.T) {
			text := TestKilledStreamResumes(t, h)
			mu.Lock()
			defer mu.Unlock()
			sections = append(sections, golden.Section{Name: "killed_and_resumed", Data: []byte(text)})
		})
	})
	if t.Failed() {
		return
	}
	sort.Slice(sections, func(i, j int) bool { return sections[i].Name < sections[j].Name })
	golden.Check(t, filepath.Join("testdata", "golden", StreamEventsGolden), sections)
}

func withHeader(r Response, h map[string]string) Response {
	r.Header = h
	return r
}

// streamRun runs the scenario and returns the events its sink saw.
func (h *Harness[P]) streamRun(t *testing.T, sc streamScenario) string {
	srv := h.Serve(t, sc.script...)
	client := h.must(t, Options{BaseURL: srv.URL(), APIKey: "test-key"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sink := &eventLines{}
	if sc.cancel {
		sink.cancelFirst = cancel
	}
	agent := h.WeatherAgent("get_weather")
	agent.Model.Retries = sc.retries
	r := &polyloop.Runner{Model: client, Parser: toolcallparser.New(toolcallparser.Options{Tools: agent.Tools}),
		Executor: WeatherExec{Tool: "get_weather"}, Store: memstore.New(), Sinks: []polyloop.EventSink{sink}}
	_, err := r.Run(ctx, "run-1", agent, polyloop.Task{Input: "Who are you?"})
	switch {
	case sc.cancel && !errors.Is(err, context.Canceled):
		t.Fatalf("err = %v; want the cancellation", err)
	case sc.cancel:
		srv.WaitAbandoned(t) // the stream was released
	case err != nil:
		t.Fatal(err)
	}
	if n := len(sc.script); srv.Count() != n {
		t.Errorf("%d requests, want %d", srv.Count(), n)
	}
	return sink.text()
}
