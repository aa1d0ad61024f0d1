package replaymodel

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/polyloop/polyloop"
)

// compareMessages returns where got departs from want at the match level,
// or nil.
func compareMessages(m Match, want, got []polyloop.Message) *DivergenceError {
	offset := 0 // index in the request of got[0]
	if m == MatchStructure {
		offset = systemCount(got)
		want, got = withoutSystem(want), got[offset:]
	}
	for i := range min(len(want), len(got)) {
		if what, w, g := compareMessage(m, i, want[i], got[i]); what != "" {
			return &DivergenceError{Message: offset + i, What: what, Recorded: w, Got: g}
		}
	}
	if len(want) != len(got) {
		return &DivergenceError{Message: offset + min(len(want), len(got)), What: "message count",
			Recorded: strconv.Itoa(len(want)) + " messages", Got: strconv.Itoa(len(got)) + " messages"}
	}
	return nil
}

// withoutSystem drops the leading system messages: MatchStructure does not
// compare the system prompt.
func withoutSystem(ms []polyloop.Message) []polyloop.Message { return ms[systemCount(ms):] }

func systemCount(ms []polyloop.Message) int {
	n := 0
	for n < len(ms) && ms[n].Role == polyloop.RoleSystem {
		n++
	}
	return n
}

// compareMessage returns what differs between two messages and excerpts of
// both sides, or "" when they agree at the match level. i is the index
// after the system messages: 0 is the task under MatchStructure.
func compareMessage(m Match, i int, w, g polyloop.Message) (what, recorded, got string) {
	switch {
	case w.Role != g.Role:
		return "role", string(w.Role), string(g.Role)
	case w.Feedback != g.Feedback:
		return "feedback", strconv.FormatBool(w.Feedback), strconv.FormatBool(g.Feedback)
	case w.ToolCallID != g.ToolCallID:
		return "tool_call_id", excerpt(w.ToolCallID), excerpt(g.ToolCallID)
	case !sameToolCalls(w.ToolCalls, g.ToolCalls):
		return "tool_calls", callsExcerpt(w.ToolCalls), callsExcerpt(g.ToolCalls)
	case w.Content != g.Content && contentMatters(m, i, w):
		return "content", excerpt(w.Content), excerpt(g.Content)
	case m == MatchExact && w.Synthetic != g.Synthetic:
		return "synthetic", strconv.FormatBool(w.Synthetic), strconv.FormatBool(g.Synthetic)
	}
	return "", "", ""
}

// contentMatters reports whether a message's content is compared: always
// under MatchExact; under MatchStructure for the task and the assistant's
// replies, not for observations and feedback.
func contentMatters(m Match, i int, w polyloop.Message) bool {
	if m == MatchExact {
		return true
	}
	return w.Role == polyloop.RoleAssistant || (i == 0 && w.Role == polyloop.RoleUser && !w.Feedback)
}

func sameToolCalls(a, b []polyloop.ToolCall) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID || a[i].Name != b[i].Name || !bytes.Equal(a[i].Args, b[i].Args) {
			return false
		}
	}
	return true
}

func callsExcerpt(calls []polyloop.ToolCall) string {
	raw, err := json.Marshal(calls)
	if err != nil { // arguments that are not JSON
		return strconv.Itoa(len(calls)) + " tool calls"
	}
	return excerpt(string(raw))
}

// compareSpecs compares the request's tools and parameters with the
// snapshot in force (MatchExact).
func compareSpecs(s polyloop.Snapshot, req polyloop.ModelRequest) *DivergenceError {
	if w, g := jsonText(s.Tools), jsonText(req.Tools); w != g {
		return &DivergenceError{Message: -1, What: "tools", Recorded: excerpt(w), Got: excerpt(g)}
	}
	if w, g := jsonText(s.Model), jsonText(req.Params); w != g {
		return &DivergenceError{Message: -1, What: "params", Recorded: excerpt(w), Got: excerpt(g)}
	}
	return nil
}

// jsonText encodes v for comparison; an empty slice and nil encode alike.
func jsonText(v any) string {
	if ts, ok := v.([]polyloop.ToolSpec); ok && len(ts) == 0 {
		return "null"
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return "<not encodable: " + err.Error() + ">"
	}
	return string(raw)
}
