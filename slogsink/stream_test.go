package slogsink_test

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/slogsink"
)

// streamEvents are the previews of a call whose first client attempt was
// retried: a text delta, a tool-call fragment, the superseded attempt, and
// a resume's superseded orphan (no delta).
func streamEvents() []polyloop.Event {
	call := func(e *polyloop.Event) { e.Step, e.CallID, e.Attempt = 1, "m1.1", 1 }
	return []polyloop.Event{
		ev(polyloop.EventModelDelta, 1, func(e *polyloop.Event) { call(e); e.Delta = &polyloop.Delta{Attempt: 1, Text: "Hel"} }),
		ev(polyloop.EventModelDelta, 1, func(e *polyloop.Event) {
			call(e)
			e.Delta = &polyloop.Delta{Attempt: 1, ToolCall: 1, ToolCallID: "c2", ToolName: "search", Args: `{"q":`}
		}),
		ev(polyloop.EventCandidateSuperseded, 1, func(e *polyloop.Event) { call(e); e.Delta = &polyloop.Delta{Attempt: 1, Superseded: true} }),
		ev(polyloop.EventCandidateSuperseded, 3, func(e *polyloop.Event) { call(e) }),
	}
}

// Deltas are logged at DEBUG with what they carry; a superseded candidate
// at INFO, naming the library's and the client's attempt.
func TestStreamedPreviews(t *testing.T) {
	t.Parallel()
	sink, lines := jsonSink(t, slogsink.Options{})
	evs := streamEvents()
	emitAll(t, sink, evs)
	got := lines()
	if len(got) != len(evs) {
		t.Fatalf("%d lines for %d events", len(got), len(evs))
	}
	want(t, got[0], map[string]any{"level": "DEBUG", "msg": "model_delta", "call_id": "m1.1", "attempt": 1,
		"delta.attempt": 1, "delta.text": "Hel"})
	absent(t, got[0], "delta.tool_call", "delta.args", "delta.superseded")
	want(t, got[1], map[string]any{"level": "DEBUG", "delta.tool_call": 1, "delta.tool_call_id": "c2",
		"delta.tool_name": "search", "delta.args": `{"q":`})
	want(t, got[2], map[string]any{"level": "INFO", "msg": "candidate_superseded", "call_id": "m1.1", "attempt": 1,
		"delta.attempt": 1, "delta.superseded": true})
	absent(t, got[2], "delta.text")
	want(t, got[3], map[string]any{"level": "INFO", "msg": "candidate_superseded", "call_id": "m1.1", "attempt": 1})
	absent(t, got[3], "delta")
}

// A handler at its default level (INFO) logs no delta — there are many —
// but every superseded candidate.
func TestDeltasNotLoggedByDefault(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	sink := slogsink.New(slog.New(slog.NewJSONHandler(&buf, nil)), slogsink.Options{})
	emitAll(t, sink, streamEvents())
	got := parseLines(t, buf.String())
	if len(got) != 2 || got[0]["msg"] != "candidate_superseded" || got[1]["msg"] != "candidate_superseded" {
		t.Errorf("lines %v; want the two superseded candidates only", got)
	}
}

// Delta texts are bounded like every other text.
func TestDeltaTextBounds(t *testing.T) {
	t.Parallel()
	sink, lines := jsonSink(t, slogsink.Options{MaxText: 3})
	emitAll(t, sink, streamEvents()[:2])
	got := lines()
	want(t, got[0], map[string]any{"delta.text": "Hel"})
	want(t, got[1], map[string]any{"delta.args": `{"q…`})
	sink, lines = jsonSink(t, slogsink.Options{MaxText: -1})
	emitAll(t, sink, streamEvents()[:1])
	absent(t, lines()[0], "delta.text")
}
