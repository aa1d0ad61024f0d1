package openaimodel

import (
	"context"
	"encoding/json"
	"path/filepath"
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
// observation; arguments that were not JSON; a batch of three calls, each
// answered in order (the middle one not executed).
var historyWithEveryShape = []polyloop.Message{
	{Role: polyloop.RoleSystem, Content: "You are a careful agent."},
	{Role: polyloop.RoleUser, Content: "What should I wear in Paris?"},
	{Role: polyloop.RoleAssistant, Content: "Let me check.", ToolCalls: []polyloop.ToolCall{
		{ID: "call_1", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}}},
	{Role: polyloop.RoleTool, ToolCallID: "call_1", Content: "12°C, rain"},
	{Role: polyloop.RoleAssistant, ToolCalls: []polyloop.ToolCall{
		{ID: "call_2", Name: "get_weather", Args: json.RawMessage(`{"city":"Lyon"}`)},
		{ID: "call_3", Name: "get_weather", Args: json.RawMessage(`{"city":"Nice"}`)}}},
	{Role: polyloop.RoleUser, Content: "One tool call per turn, please.", Feedback: true},
	{Role: polyloop.RoleAssistant, Content: "```bash\nls\n```"},
	{Role: polyloop.RoleTool, Content: "README.md\n"},
	{Role: polyloop.RoleAssistant, Content: ""},
	{Role: polyloop.RoleUser, Content: "No action found in your reply.", Feedback: true},
	{Role: polyloop.RoleAssistant, ToolCalls: []polyloop.ToolCall{
		{ID: "call_4", Name: "nope", Args: json.RawMessage(`"{city: Paris"`)}}},
	{Role: polyloop.RoleTool, ToolCallID: "call_4", Content: polyloop.DefaultNotExecuted, Synthetic: true},
	{Role: polyloop.RoleAssistant, Content: "Both at once.", ToolCalls: []polyloop.ToolCall{
		{ID: "call_7", Name: "get_weather", Args: json.RawMessage(`{"city":"Rome"}`)},
		{ID: "call_8", Name: "nope", Args: json.RawMessage(`{}`)},
		{ID: "call_9", Name: "get_weather", Args: json.RawMessage(`{"city":"Bern"}`)}}},
	{Role: polyloop.RoleTool, ToolCallID: "call_7", Content: "20°C, sun"},
	{Role: polyloop.RoleTool, ToolCallID: "call_8", Content: polyloop.DefaultNotExecuted, Synthetic: true},
	{Role: polyloop.RoleTool, ToolCallID: "call_9", Content: "9°C, fog"},
}

// historyWithEmptyObservations is a code agent's history whose
// observations have no visible text (`mkdir x` prints nothing; a command
// may print only a newline), with replies whose text is only white space,
// ending on an empty observation.
var historyWithEmptyObservations = []polyloop.Message{
	{Role: polyloop.RoleUser, Content: "Make a directory x and list it."},
	{Role: polyloop.RoleAssistant, Content: "```bash\nmkdir x\n```"},
	{Role: polyloop.RoleTool, Content: ""},
	{Role: polyloop.RoleAssistant, Content: "```bash\nls x\n```"},
	{Role: polyloop.RoleTool, Content: "\n"},
	{Role: polyloop.RoleAssistant, Content: " \n\t"},
	{Role: polyloop.RoleUser, Content: "No action found in your reply.", Feedback: true},
	{Role: polyloop.RoleAssistant, Content: "\n", ToolCalls: []polyloop.ToolCall{
		{ID: "call_1", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}}},
	{Role: polyloop.RoleTool, ToolCallID: "call_1", Content: ""},
	{Role: polyloop.RoleAssistant, Content: "```bash\ntouch x/y\n```"},
	{Role: polyloop.RoleTool, Content: ""},
}

// TestEmptyObservationsAreSent checks that no message of a history with
// empty observations and blank replies is dropped or merged: the API
// accepts empty contents, so each message is sent as itself, in order.
func TestEmptyObservationsAreSent(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, response{Status: 200, Fixture: "text.json"})
	c := newTestClient(t, srv.URL())
	if _, err := c.Complete(context.Background(), polyloop.ModelRequest{Messages: historyWithEmptyObservations,
		Params: polyloop.ModelParams{Model: "m"}}); err != nil {
		t.Fatal(err)
	}
	var req struct {
		Messages []struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(srv.Request(0).Body, &req); err != nil {
		t.Fatal(err)
	}
	if len(req.Messages) != len(historyWithEmptyObservations) {
		t.Fatalf("%d messages sent for a history of %d", len(req.Messages), len(historyWithEmptyObservations))
	}
	for i, m := range historyWithEmptyObservations {
		got := req.Messages[i]
		wantRole := string(m.Role)
		if m.Role == polyloop.RoleTool && m.ToolCallID == "" {
			wantRole = "user"
		}
		if got.Role != wantRole || got.Content == nil || *got.Content != m.Content {
			t.Errorf("message %d sent as %s %v, want %s %q", i, got.Role, got.Content, wantRole, m.Content)
		}
	}
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
				Params: polyloop.ModelParams{
					Model: "gpt-4o", Temperature: ptr(0.2), TopP: ptr(0.9), MaxOutputTokens: 256,
					Seed: ptr(int64(7)), Stop: []string{"END"}, Extra: map[string]any{"reasoning_effort": "low", "user": "u-1"},
				},
			},
		},
		{
			name: "max_tokens_field",
			opts: Options{MaxTokensField: MaxTokens, Model: "llama3.1:8b"},
			req: polyloop.ModelRequest{
				Messages: []polyloop.Message{{Role: polyloop.RoleUser, Content: "Hi"}},
				Params:   polyloop.ModelParams{MaxOutputTokens: 64, Temperature: ptr(0.0)},
			},
		},
		{
			name: "history",
			req: polyloop.ModelRequest{
				Messages: historyWithEveryShape,
				Tools:    []polyloop.ToolSpec{weatherTool},
				Params:   polyloop.ModelParams{Model: "gpt-4o"},
			},
		},
		{
			name: "empty_observations",
			req: polyloop.ModelRequest{
				Messages: historyWithEmptyObservations,
				Tools:    []polyloop.ToolSpec{weatherTool},
				Params:   polyloop.ModelParams{Model: "gpt-4o"},
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
			checkToolPairing(t, body)
			golden.File(t, filepath.Join("testdata", "golden", tc.name+".json"), providertest.PrettyJSON(t, body))
		})
	}
}

// checkToolPairing asserts the rule the API enforces: an assistant message
// with tool calls is followed at once by one tool message per call id, and
// no tool message appears anywhere else.
func checkToolPairing(t *testing.T, body []byte) {
	t.Helper()
	var req struct {
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	msgs := req.Messages
	for i := 0; i < len(msgs); i++ {
		if msgs[i].Role == "tool" {
			t.Errorf("message %d: tool message that follows no assistant tool call", i)
			continue
		}
		if msgs[i].Role != "assistant" {
			continue
		}
		for _, call := range msgs[i].ToolCalls {
			i++
			if i >= len(msgs) || msgs[i].Role != "tool" || msgs[i].ToolCallID != call.ID {
				t.Errorf("tool call %s is not answered right after its assistant message", call.ID)
				return
			}
		}
	}
}
