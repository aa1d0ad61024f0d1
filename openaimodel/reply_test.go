package openaimodel

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/providertest"
)

// replies are the success responses the shared tests send, the replies
// they must give and their costs from prices.json (nil: unknown).
var replies = []providertest.ReplyCase{
	{
		Fixture: "text.json",
		Want: polyloop.ModelReply{
			Text: "The capital of France is Paris.", Model: "gpt-4o-2024-08-06", FinishReason: "stop",
			Usage: polyloop.Usage{InputTokens: 1117, OutputTokens: 46, CachedTokens: 1024},
		},
		// gpt-4o: 93 uncached × 2.50 + 1024 cached × 1.25 + 46 × 10.00 per million.
		Cost: ptr((93*2.50 + 1024*1.25 + 46*10.00) / 1e6),
	},
	{
		Fixture: "tool_call.json",
		Want: polyloop.ModelReply{
			ToolCalls: []polyloop.ToolCall{{ID: "call_abc123", Name: "get_current_weather",
				Args: json.RawMessage(`{"location":"Boston, MA"}`)}},
			Model: "gpt-4o-mini-2024-07-18", FinishReason: "tool_calls",
			Usage: polyloop.Usage{InputTokens: 82, OutputTokens: 17},
		},
		Cost: ptr((82*0.15 + 17*0.60) / 1e6),
	},
	{
		// Empty content with two tool calls; the second's arguments are
		// not JSON and are kept as a string.
		Fixture: "empty_content_tool_calls.json",
		Want: polyloop.ModelReply{
			ToolCalls: []polyloop.ToolCall{
				{ID: "call_1", Name: "read_file", Args: json.RawMessage(`{"path":"README.md"}`)},
				{ID: "call_2", Name: "list_dir", Args: json.RawMessage(`"{\"path\": \".\""`)},
			},
			Model: "o4-mini-2025-04-16", FinishReason: "tool_calls",
			Usage: polyloop.Usage{InputTokens: 400, OutputTokens: 250, CachedTokens: 128, ReasoningTokens: 192},
		},
		Cost: ptr((272*1.10 + 128*0.275 + 250*4.40) / 1e6),
	},
	{
		Fixture: "refusal.json",
		Want: polyloop.ModelReply{
			Text: "I'm sorry, I can't assist with that request.", Model: "gpt-4o-2024-08-06", FinishReason: "refusal",
			Usage: polyloop.Usage{InputTokens: 30, OutputTokens: 10},
		},
		Cost: ptr((30*2.50 + 10*10.00) / 1e6),
	},
	{
		// A local server: no usage, a tool call without an id or
		// arguments, a model the price table does not know.
		Fixture: "local_server.json",
		Want: polyloop.ModelReply{
			ToolCalls: []polyloop.ToolCall{{ID: "polyloop_m1.1_0", Name: "get_time"}},
			Model:     "llama3.1:8b", FinishReason: "tool_calls",
		},
	},
}

func TestArgumentsRoundTrip(t *testing.T) {
	t.Parallel()
	// A bare JSON string as arguments is the one text that does not come
	// back unchanged (it comes back unquoted): see argumentsText.
	for _, s := range []string{`{"a": 1}`, `{"a":1}`, `{a: 1`, `[1, 2]`, `17`, ``} {
		raw := argumentsJSON(s)
		if len(raw) > 0 && !json.Valid(raw) {
			t.Errorf("argumentsJSON(%q) = %s: not JSON", s, raw)
		}
		back := argumentsText(raw)
		var a, b any
		if s == "" {
			if back != "{}" {
				t.Errorf("empty arguments are sent back as %q, want {}", back)
			}
			continue
		}
		if json.Unmarshal([]byte(s), &a) != nil {
			if back != s { // not JSON: the model's text goes back unchanged
				t.Errorf("argumentsText(argumentsJSON(%q)) = %q", s, back)
			}
			continue
		}
		if err := json.Unmarshal([]byte(back), &b); err != nil || !reflect.DeepEqual(a, b) {
			t.Errorf("argumentsText(argumentsJSON(%q)) = %q", s, back)
		}
	}
}

// TestArgumentsSurviveTheLog: the arguments of a reply are the bytes a
// record keeps after encoding and decoding, so a resumed run sends the same
// request as the uninterrupted one.
func TestArgumentsSurviveTheLog(t *testing.T) {
	t.Parallel()
	providertest.CheckArgsSurviveTheLog(t, argumentsJSON, `{"cmd": "a < b && c > d"}`, "{\n\"x\": [1, 2]\n}", `{bad`)
}
