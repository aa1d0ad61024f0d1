package anthropicmodel

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/golden"
	"github.com/polyloop/polyloop/internal/providertest"
)

func ptr[T any](v T) *T { return &v }

var weatherTool = polyloop.ToolSpec{
	Name:        "get_weather",
	Description: "Current weather of a city.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"unit":{"enum":["c","f"]}},"required":["city"]}`),
}

// historyWithEveryShape is a history holding each shape the library's
// History produces: a tool call answered; an Invalid step after two tool
// calls (the library answered none, it sent feedback); an observation of a
// code action (no tool-call id); a reply with empty text; a synthetic
// observation; a batch of three calls, each
// answered in order (the middle one not executed).
var historyWithEveryShape = []polyloop.Message{
	{Role: polyloop.RoleSystem, Content: "You are a careful agent."},
	{Role: polyloop.RoleUser, Content: "What should I wear in Paris?"},
	{Role: polyloop.RoleAssistant, Content: "Let me check.", ToolCalls: []polyloop.ToolCall{
		{ID: "toolu_1", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}}},
	{Role: polyloop.RoleTool, ToolCallID: "toolu_1", Content: "12°C, rain"},
	{Role: polyloop.RoleAssistant, ToolCalls: []polyloop.ToolCall{
		{ID: "toolu_2", Name: "get_weather", Args: json.RawMessage(`{"city":"Lyon"}`)},
		{ID: "toolu_3", Name: "get_weather", Args: json.RawMessage(`{"city":"Nice"}`)}}},
	{Role: polyloop.RoleUser, Content: "One tool call per turn, please.", Feedback: true},
	{Role: polyloop.RoleAssistant, Content: "```bash\nls\n```"},
	{Role: polyloop.RoleTool, Content: "README.md\n"},
	{Role: polyloop.RoleAssistant, Content: ""},
	{Role: polyloop.RoleUser, Content: "No action found in your reply.", Feedback: true},
	{Role: polyloop.RoleAssistant, ToolCalls: []polyloop.ToolCall{
		{ID: "toolu_4", Name: "nope", Args: json.RawMessage(`{"city":"Paris"}`)}}},
	{Role: polyloop.RoleTool, ToolCallID: "toolu_4", Content: polyloop.DefaultNotExecuted, Synthetic: true},
	{Role: polyloop.RoleAssistant, ToolCalls: []polyloop.ToolCall{
		{ID: "toolu_5", Name: "get_weather", Args: json.RawMessage(`{"city":"Oslo"}`)}}},
	{Role: polyloop.RoleTool, ToolCallID: "toolu_5", Content: ""},
	{Role: polyloop.RoleAssistant, Content: "Both at once.", ToolCalls: []polyloop.ToolCall{
		{ID: "toolu_7", Name: "get_weather", Args: json.RawMessage(`{"city":"Rome"}`)},
		{ID: "toolu_8", Name: "nope", Args: json.RawMessage(`{}`)},
		{ID: "toolu_9", Name: "get_weather", Args: json.RawMessage(`{"city":"Bern"}`)}}},
	{Role: polyloop.RoleTool, ToolCallID: "toolu_7", Content: "20°C, sun"},
	{Role: polyloop.RoleTool, ToolCallID: "toolu_8", Content: polyloop.DefaultNotExecuted, Synthetic: true},
	{Role: polyloop.RoleTool, ToolCallID: "toolu_9", Content: "9°C, fog"},
}

// historyWithEmptyObservations is a code agent's history whose
// observations have no visible text (`mkdir x` prints nothing; a command
// may print only a newline), with replies whose text is only white space,
// ending on an empty observation: the next call must answer it.
var historyWithEmptyObservations = []polyloop.Message{
	{Role: polyloop.RoleSystem, Content: "  \n"},
	{Role: polyloop.RoleUser, Content: "Make a directory x and list it."},
	{Role: polyloop.RoleAssistant, Content: "```bash\nmkdir x\n```"},
	{Role: polyloop.RoleTool, Content: ""},
	{Role: polyloop.RoleAssistant, Content: "```bash\nls x\n```"},
	{Role: polyloop.RoleTool, Content: "\n"},
	{Role: polyloop.RoleAssistant, Content: " \n\t"},
	{Role: polyloop.RoleUser, Content: "No action found in your reply.", Feedback: true},
	{Role: polyloop.RoleAssistant, Content: "\n", ToolCalls: []polyloop.ToolCall{
		{ID: "toolu_1", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}}},
	{Role: polyloop.RoleTool, ToolCallID: "toolu_1", Content: " \n"},
	{Role: polyloop.RoleAssistant, Content: "```bash\ntouch x/y\n```"},
	{Role: polyloop.RoleTool, Content: ""},
}

func TestRequestGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts Options
		req  polyloop.ModelRequest
	}{
		{
			name: "params",
			req: polyloop.ModelRequest{
				Messages: []polyloop.Message{
					{Role: polyloop.RoleSystem, Content: "You are terse."},
					{Role: polyloop.RoleUser, Content: "Weather in Paris?"},
				},
				Tools: []polyloop.ToolSpec{weatherTool, {Name: "get_time"}},
				Params: polyloop.ModelParams{Model: "claude-sonnet-5-5", MaxOutputTokens: 256, Stop: []string{"END"},
					Extra: map[string]any{"metadata": map[string]any{"user_id": "u-1"}}},
			},
		},
		{
			name: "defaults_and_dropped_params",
			opts: Options{Model: "claude-haiku-5-5", MaxTokens: 1000, DropUnsupportedParams: true},
			req: polyloop.ModelRequest{
				Messages: []polyloop.Message{{Role: polyloop.RoleUser, Content: "Hi"}},
				Params:   polyloop.ModelParams{Temperature: ptr(0.2), TopP: ptr(0.9), Seed: ptr(int64(7))},
			},
		},
		{
			name: "history",
			req: polyloop.ModelRequest{
				Messages: historyWithEveryShape,
				Tools:    []polyloop.ToolSpec{weatherTool},
				Params:   polyloop.ModelParams{Model: "claude-sonnet-5-5"},
			},
		},
		{
			name: "empty_observations",
			req: polyloop.ModelRequest{
				Messages: historyWithEmptyObservations,
				Tools:    []polyloop.ToolSpec{weatherTool},
				Params:   polyloop.ModelParams{Model: "claude-sonnet-5-5"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, response{Status: 200, Fixture: "text.json"})
			tc.opts.BaseURL, tc.opts.APIKey = srv.URL(), "test-key"
			c, err := New(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Complete(context.Background(), tc.req); err != nil {
				t.Fatal(err)
			}
			body := srv.Request(0).Body
			checkTurns(t, body)
			golden.File(t, filepath.Join("testdata", "golden", tc.name+".json"), providertest.PrettyJSON(t, body))
		})
	}
}

func TestUnsupportedParamsFailBeforeSending(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, response{Status: 200, Fixture: "text.json"})
	c := newTestClient(t, srv.URL())
	for name, mp := range map[string]polyloop.ModelParams{
		"temperature": {Model: "m", Temperature: ptr(0.0)},
		"top_p":       {Model: "m", TopP: ptr(1.0)},
		"seed":        {Model: "m", Seed: ptr(int64(1))},
	} {
		_, err := c.Complete(context.Background(), polyloop.ModelRequest{Messages: userOnly, Params: mp})
		if !errors.Is(err, ErrUnsupportedParam) {
			t.Errorf("%s: err = %v, want ErrUnsupportedParam", name, err)
		}
	}
	if srv.Count() != 0 {
		t.Errorf("%d requests were sent", srv.Count())
	}
}

// TestEmptyObservationsKeepTurnsApart checks that an observation without
// visible text is sent as the placeholder, so that each reply keeps its own
// assistant turn and the request ends on the user's turn.
func TestEmptyObservationsKeepTurnsApart(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string]Options{
		"default": {},
		"option":  {EmptyObservation: "[nothing printed]"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, response{Status: 200, Fixture: "text.json"})
			opts.BaseURL, opts.APIKey = srv.URL(), "test-key"
			c, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Complete(context.Background(), polyloop.ModelRequest{Messages: historyWithEmptyObservations,
				Params: polyloop.ModelParams{Model: "m"}}); err != nil {
				t.Fatal(err)
			}
			checkTurns(t, srv.Request(0).Body)
			// Five replies; the one with only white space leaves no turn.
			if got := turnRoles(t, srv.Request(0).Body)["assistant"]; got != 4 {
				t.Errorf("%d assistant turns, want 4 (one per reply with something visible)", got)
			}
			want := cmp.Or(opts.EmptyObservation, DefaultEmptyObservation)
			if got := bytes.Count(srv.Request(0).Body, []byte(`"text":"`+want+`"`)); got != 3 {
				t.Errorf("placeholder %q sent %d times, want 3 (the code observations without visible text)", want, got)
			}
		})
	}
}

func TestHistoryEndingOnAssistantRefused(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, response{Status: 200, Fixture: "text.json"})
	c := newTestClient(t, srv.URL())
	h := append(slices.Clone(userOnly), polyloop.Message{Role: polyloop.RoleAssistant, Content: "Sure, "})
	_, err := c.Complete(context.Background(), polyloop.ModelRequest{Messages: h, Params: polyloop.ModelParams{Model: "m"}})
	if !errors.Is(err, ErrBadRequest) {
		t.Errorf("err = %v, want ErrBadRequest", err)
	}
	if srv.Count() != 0 {
		t.Errorf("%d requests were sent", srv.Count())
	}
}

// checkTurns asserts the rules the API enforces: roles alternate, starting
// with the user and ending with the user (a final assistant turn is a
// prefill); no text block is empty or white space, in a tool_result
// either; every tool_use is answered by a
// tool_result at the start of the next turn, once; tool_result blocks
// answer the previous turn's tool_use blocks and only them.
func checkTurns(t *testing.T, body []byte) {
	t.Helper()
	var req struct {
		System   []struct{ Text string } `json:"system"`
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type      string                  `json:"type"`
				Text      string                  `json:"text"`
				ID        string                  `json:"id"`
				ToolUseID string                  `json:"tool_use_id"`
				Content   []struct{ Text string } `json:"content"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	for i, b := range req.System {
		if strings.TrimSpace(b.Text) == "" {
			t.Errorf("system block %d has no visible text", i)
		}
	}
	var pending []string
	for i, m := range req.Messages {
		if want := []string{"user", "assistant"}[i%2]; m.Role != want {
			t.Fatalf("message %d has role %s, want %s: roles must alternate from the user", i, m.Role, want)
		}
		if len(m.Content) == 0 {
			t.Errorf("message %d is empty", i)
		}
		var uses []string
		for j, b := range m.Content {
			switch b.Type {
			case "text":
				if strings.TrimSpace(b.Text) == "" {
					t.Errorf("message %d block %d: text %q has no visible character", i, j, b.Text)
				}
			case "tool_use":
				uses = append(uses, b.ID)
			case "tool_result":
				if j >= len(pending) || pending[j] != b.ToolUseID {
					t.Errorf("message %d block %d: tool_result for %s; the pending tool_use ids are %v, to be answered first and in order", i, j, b.ToolUseID, pending)
				}
				for _, c := range b.Content {
					if strings.TrimSpace(c.Text) == "" {
						t.Errorf("message %d block %d: tool_result text %q has no visible character", i, j, c.Text)
					}
				}
			}
		}
		if len(pending) > 0 && (len(m.Content) < len(pending) || m.Content[len(pending)-1].Type != "tool_result") {
			t.Errorf("message %d does not answer every tool_use of the previous turn %v", i, pending)
		}
		pending = uses
	}
	if len(pending) > 0 {
		t.Errorf("the last turn's tool_use blocks %v are unanswered", pending)
	}
	if n := len(req.Messages); n > 0 && req.Messages[n-1].Role != "user" {
		t.Errorf("the request ends with a %s turn, want user", req.Messages[n-1].Role)
	}
}

// turnRoles counts the request's turns of each role.
func turnRoles(t *testing.T, body []byte) map[string]int {
	t.Helper()
	var req struct {
		Messages []struct{ Role string } `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, m := range req.Messages {
		n[m.Role]++
	}
	return n
}
