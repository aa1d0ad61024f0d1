package openaimodel

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/polyloop/polyloop"
)

// TestParallelToolCalls checks that ModelParams.ParallelToolCalls becomes
// parallel_tool_calls when tools are sent, and that nothing is sent
// otherwise: the API refuses the parameter without tools, and unset means
// the API's default (allowed).
func TestParallelToolCalls(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		set   *bool
		tools []polyloop.ToolSpec
		want  string // the field's JSON, "" for absent
	}{
		{"unset", nil, []polyloop.ToolSpec{weatherTool}, ""},
		{"off", ptr(false), []polyloop.ToolSpec{weatherTool}, "false"},
		{"on", ptr(true), []polyloop.ToolSpec{weatherTool}, "true"},
		{"off without tools", ptr(false), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, response{Status: 200, Fixture: "text.json"})
			req := polyloop.ModelRequest{Messages: userOnly, Tools: tc.tools,
				Params: polyloop.ModelParams{Model: "gpt-4o", ParallelToolCalls: tc.set}}
			if _, err := newTestClient(t, srv.URL()).Complete(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			var body map[string]json.RawMessage
			if err := json.Unmarshal(srv.Request(0).Body, &body); err != nil {
				t.Fatal(err)
			}
			if got := string(body["parallel_tool_calls"]); got != tc.want {
				t.Errorf("parallel_tool_calls = %q, want %q", got, tc.want)
			}
		})
	}
}
