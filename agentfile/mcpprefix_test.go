package agentfile

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/polyloop/polyloop"
)

// whoamiServer serves one tool, whoami, answering answer.
func whoamiServer(t *testing.T, answer string) string {
	srv := mcp.NewServer(&mcp.Implementation{Name: "whoami-" + answer, Version: "v1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Description: "Says who."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: answer}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// TestMCPPrefix: two servers offering the same tool name serve one agent
// when each has its own prefix; without one, loading says which name clashes.
func TestMCPPrefix(t *testing.T) {
	t.Parallel()
	a, b := whoamiServer(t, "alpha"), whoamiServer(t, "beta")
	src := scriptHead + "tools:\n  mcp:\n    - {name: a, url: '" + a + "', prefix: a_}\n    - {name: b, url: '" + b + "', prefix: b_}\n"
	cfg, err := Load(context.Background(), writeFile(t, "agent.yaml", src), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	for tool, want := range map[string]string{"a_whoami": "alpha", "b_whoami": "beta"} {
		out, err := cfg.Executor.Execute(context.Background(), polyloop.Action{Tool: tool, Args: json.RawMessage(`{}`)})
		if err != nil || out.Status != polyloop.Executed || out.Observation != want {
			t.Errorf("%s: %+v, %v; want %q", tool, out, err, want)
		}
	}
	var names []string
	for _, s := range cfg.Agent.Tools {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ","); got != "a_whoami,b_whoami" {
		t.Errorf("the agent's tools are %s", got)
	}

	clash := scriptHead + "tools:\n  mcp:\n    - {name: a, url: '" + a + "'}\n    - {name: b, url: '" + b + "'}\n"
	_, err = Load(context.Background(), writeFile(t, "agent.yaml", clash), nil)
	if err == nil || !strings.Contains(err.Error(), `"whoami"`) || !strings.Contains(err.Error(), "tools.mcp[1]") ||
		!strings.Contains(err.Error(), "prefix: b_") {
		t.Errorf("two servers offering whoami without prefixes: err = %v, want the clash named at tools.mcp[1] with prefix: suggested", err)
	}
}

func TestMCPPrefixIsChecked(t *testing.T) {
	t.Parallel()
	src := scriptHead + "tools:\n  mcp:\n    - {name: x, command: srv, prefix: 'a b'}\n"
	_, err := Check(writeFile(t, "agent.yaml", src))
	if err == nil || !strings.Contains(err.Error(), "tools.mcp[0].prefix") || !strings.Contains(err.Error(), "letters, digits") {
		t.Errorf("err = %v, want the prefix refused at tools.mcp[0].prefix", err)
	}
}
