package anthropicmodel

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/providertest"
)

// TestParallelToolCalls checks that ModelParams.ParallelToolCalls becomes
// tool_choice {"type": "auto", "disable_parallel_tool_use": !allowed} when
// tools are sent, and that nothing is sent otherwise (unset means the API's
// default, which allows several tool uses).
func TestParallelToolCalls(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		set   *bool
		tools []polyloop.ToolSpec
		want  string // tool_choice's JSON, "" for absent
	}{
		{"unset", nil, []polyloop.ToolSpec{weatherTool}, ""},
		{"off", ptr(false), []polyloop.ToolSpec{weatherTool}, `{"disable_parallel_tool_use":true,"type":"auto"}`},
		{"on", ptr(true), []polyloop.ToolSpec{weatherTool}, `{"disable_parallel_tool_use":false,"type":"auto"}`},
		{"off without tools", ptr(false), nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, response{Status: 200, Fixture: "text.json"})
			req := polyloop.ModelRequest{Messages: providertest.UserOnly, Tools: tc.tools,
				Params: polyloop.ModelParams{Model: "claude-sonnet-4-5", ParallelToolCalls: tc.set}}
			if _, err := newTestClient(t, srv.URL()).Complete(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			var body map[string]json.RawMessage
			if err := json.Unmarshal(srv.Request(0).Body, &body); err != nil {
				t.Fatal(err)
			}
			if got := string(body["tool_choice"]); got != tc.want {
				t.Errorf("tool_choice = %s, want %s", got, tc.want)
			}
		})
	}
}
