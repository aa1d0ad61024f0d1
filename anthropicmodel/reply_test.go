package anthropicmodel

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/providertest"
)

// replies are the success responses the shared tests send, the replies
// they must give and their costs from prices.json (nil: unknown).
var replies = []providertest.ReplyCase{
	{
		// Cache reads and writes count as input and are priced as such:
		// claude-sonnet-5-5 at 2.00 input, 0.10 cache read, 2.50 cache
		// write, 10.00 output.
		Fixture: "text.json",
		Want: polyloop.ModelReply{
			Text: "Hi! My name is Claude.", Model: "claude-sonnet-5-5-20260915", FinishReason: "end_turn",
			Usage: polyloop.Usage{InputTokens: 2095 + 8000 + 1000, OutputTokens: 503, CachedTokens: 8000, ReasoningTokens: 120},
		},
		Cost: ptr((2095*2.00 + 8000*0.10 + 1000*2.50 + 503*10.00) / 1e6),
	},
	{
		Fixture: "tool_use.json",
		Want: polyloop.ModelReply{
			Text: "I'll check the current weather in San Francisco for you.",
			ToolCalls: []polyloop.ToolCall{{ID: "toolu_01A09q90qw90lq917835lq9", Name: "get_weather",
				Args: json.RawMessage(`{"location":"San Francisco, CA","unit":"celsius"}`)}},
			Model: "claude-haiku-4-5-20251001", FinishReason: "tool_use",
			Usage: polyloop.Usage{InputTokens: 472, OutputTokens: 89},
		},
		Cost: ptr((472*1.00 + 89*5.00) / 1e6),
	},
	{
		Fixture: "empty_content_tool_use.json",
		Want: polyloop.ModelReply{
			ToolCalls: []polyloop.ToolCall{
				{ID: "toolu_01", Name: "read_file", Args: json.RawMessage(`{"path":"README.md"}`)},
				{ID: "toolu_02", Name: "list_dir", Args: json.RawMessage(`{"path":"."}`)},
			},
			Model: "claude-opus-5-5", FinishReason: "tool_use",
			Usage: polyloop.Usage{InputTokens: 1200, OutputTokens: 140},
		},
		Cost: ptr((1200*4.00 + 140*20.00) / 1e6),
	},
	{
		Fixture: "refusal.json",
		Want: polyloop.ModelReply{
			Model: "claude-sonnet-5-5", FinishReason: "refusal",
			Usage: polyloop.Usage{InputTokens: 30, OutputTokens: 4},
		},
		Cost: ptr((30*2.00 + 4*10.00) / 1e6),
	},
	{
		// A model the price table does not know: the cost is unknown.
		Fixture: "unknown_model.json",
		Want: polyloop.ModelReply{
			Text: "Done.", Model: "claude-fable-5-2", FinishReason: "end_turn",
			Usage: polyloop.Usage{InputTokens: 10, OutputTokens: 2},
		},
	},
}

func TestLongPromptTariff(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, "http://unused/")
	// claude-haiku-5-5: a prompt over 100,000 tokens (reads and writes
	// included) is priced at the long-prompt tariff for every token.
	u := c.usage(anthropicUsage(90_000, 20_000, 0, 1000), "claude-haiku-5-5")
	want := (90_000*0.50 + 20_000*0.05 + 1000*2.50) / 1e6
	if u.CostUSD == nil || math.Abs(*u.CostUSD-want) > 1e-12 {
		t.Errorf("cost = %v, want %v", u.CostUSD, want)
	}
	u = c.usage(anthropicUsage(90_000, 10_000, 0, 1000), "claude-haiku-5-5")
	want = (90_000*0.10 + 10_000*0.01 + 1000*0.50) / 1e6
	if u.CostUSD == nil || math.Abs(*u.CostUSD-want) > 1e-12 {
		t.Errorf("cost at the threshold = %v, want %v", u.CostUSD, want)
	}
}

// TestInputSurvivesTheLog: the arguments of a reply are the bytes a record
// keeps after encoding and decoding, so a resumed run sends the same request
// as the uninterrupted one.
func TestInputSurvivesTheLog(t *testing.T) {
	t.Parallel()
	compactText := func(s string) json.RawMessage { return compact(json.RawMessage(s)) }
	providertest.CheckArgsSurviveTheLog(t, compactText, `{"cmd": "a < b && c > d"}`, "{\n\"x\": [1, 2]\n}")
}
