package anthropicmodel

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/polyloop/polyloop"
)

func TestReplies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fixture string
		want    polyloop.ModelReply
		// cost is the expected cost from prices.json; nil: unknown.
		cost *float64
	}{
		{
			// Cache reads and writes count as input and are priced as such:
			// claude-sonnet-5-5 at 2.00 input, 0.10 cache read, 2.50 cache
			// write, 10.00 output.
			fixture: "text.json",
			want: polyloop.ModelReply{
				Text: "Hi! My name is Claude.", Model: "claude-sonnet-5-5-20260915", FinishReason: "end_turn",
				Usage: polyloop.Usage{InputTokens: 2095 + 8000 + 1000, OutputTokens: 503, CachedTokens: 8000, ReasoningTokens: 120},
			},
			cost: ptr((2095*2.00 + 8000*0.10 + 1000*2.50 + 503*10.00) / 1e6),
		},
		{
			fixture: "tool_use.json",
			want: polyloop.ModelReply{
				Text: "I'll check the current weather in San Francisco for you.",
				ToolCalls: []polyloop.ToolCall{{ID: "toolu_01A09q90qw90lq917835lq9", Name: "get_weather",
					Args: json.RawMessage(`{"location":"San Francisco, CA","unit":"celsius"}`)}},
				Model: "claude-haiku-4-5-20251001", FinishReason: "tool_use",
				Usage: polyloop.Usage{InputTokens: 472, OutputTokens: 89},
			},
			cost: ptr((472*1.00 + 89*5.00) / 1e6),
		},
		{
			fixture: "empty_content_tool_use.json",
			want: polyloop.ModelReply{
				ToolCalls: []polyloop.ToolCall{
					{ID: "toolu_01", Name: "read_file", Args: json.RawMessage(`{"path":"README.md"}`)},
					{ID: "toolu_02", Name: "list_dir", Args: json.RawMessage(`{"path":"."}`)},
				},
				Model: "claude-opus-5-5", FinishReason: "tool_use",
				Usage: polyloop.Usage{InputTokens: 1200, OutputTokens: 140},
			},
			cost: ptr((1200*4.00 + 140*20.00) / 1e6),
		},
		{
			fixture: "refusal.json",
			want: polyloop.ModelReply{
				Model: "claude-sonnet-5-5", FinishReason: "refusal",
				Usage: polyloop.Usage{InputTokens: 30, OutputTokens: 4},
			},
			cost: ptr((30*2.00 + 4*10.00) / 1e6),
		},
		{
			// A model the price table does not know: the cost is unknown.
			fixture: "unknown_model.json",
			want: polyloop.ModelReply{
				Text: "Done.", Model: "claude-fable-5-2", FinishReason: "end_turn",
				Usage: polyloop.Usage{InputTokens: 10, OutputTokens: 2},
			},
		},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, response{Status: 200, Fixture: tc.fixture, Header: map[string]string{"request-id": "req_" + tc.fixture}})
			got, err := call(t, newTestClient(t, srv.URL()), 2)
			if err != nil {
				t.Fatal(err)
			}
			tc.want.Attempts, tc.want.RequestID = 1, "req_"+tc.fixture
			gotCost := got.Usage.CostUSD
			got.Usage.CostUSD = nil
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("reply\n got %+v\nwant %+v", got, tc.want)
			}
			switch {
			case tc.cost == nil && gotCost != nil:
				t.Errorf("cost = %v, want unknown (nil)", *gotCost)
			case tc.cost != nil && (gotCost == nil || math.Abs(*gotCost-*tc.cost) > 1e-12):
				t.Errorf("cost = %v, want %v", gotCost, *tc.cost)
			}
		})
	}
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
	for _, s := range []string{`{"cmd": "a < b && c > d"}`, "{\n\"x\": [1, 2]\n}"} {
		args := compact(json.RawMessage(s))
		enc, err := json.Marshal(polyloop.ToolCall{Name: "t", Args: args})
		if err != nil {
			t.Fatal(err)
		}
		var back polyloop.ToolCall
		if err := json.Unmarshal(enc, &back); err != nil {
			t.Fatal(err)
		}
		if string(back.Args) != string(args) {
			t.Errorf("input %q: %s in the reply, %s after the log", s, args, back.Args)
		}
	}
}
