package agentfile

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/anthropicmodel"
	"github.com/polyloop/polyloop/mcpexec"
	"github.com/polyloop/polyloop/openaimodel"
	"github.com/polyloop/polyloop/shellexec"
)

// The executors an agent file builds know their tools.
var (
	_ polyloop.ToolLister = (*shellexec.Executor)(nil)
	_ polyloop.ToolLister = (*mcpexec.Executor)(nil)
)

// TestMissingKeysSpeakTheAgentFile: a model without its key is refused
// before anything runs, naming the environment variable and the agent-file
// keys that matter — never the Go options of the client. An api_key_env
// whose variable is unset is refused even when the default variable is
// set: that key must not go to another server.
func TestMissingKeysSpeakTheAgentFile(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	none := &Options{Getenv: func(string) string { return "" }}
	for _, tt := range []struct {
		src      string
		sentinel error
		want     string
	}{
		{"name: a\nmodel: {provider: openai, model: m}\n", openaimodel.ErrNoAPIKey,
			"2:19: model.provider: no API key for OpenAI's API: set the environment variable OPENAI_API_KEY (or name another variable with model.api_key_env), or set model.base_url to a server that needs no key"},
		{"name: a\nmodel:\n  provider: anthropic\n  model: m\n", anthropicmodel.ErrNoAPIKey,
			"3:13: model.provider: no API key for Anthropic's API: set the environment variable ANTHROPIC_API_KEY (or name another variable with model.api_key_env)"},
	} {
		p := writeFile(t, "agent.yaml", tt.src)
		_, err := Load(context.Background(), p, none)
		if !errors.Is(err, tt.sentinel) || !errors.Is(err, ErrInvalid) || err.Error() != p+":"+tt.want {
			t.Errorf("Load = %v\nwant %s:%s", err, p, tt.want)
		}
		if strings.Contains(err.Error(), "Options.") {
			t.Errorf("the error speaks Go: %v", err)
		}
	}
	// A local server needs no key.
	local := writeFile(t, "agent.yaml", "name: a\nmodel: {provider: openai, model: m, base_url: 'http://127.0.0.1:11434/v1/'}\n")
	if _, err := Load(context.Background(), local, none); err != nil {
		t.Errorf("a local server without a key: %v", err)
	}
	gw := writeFile(t, "agent.yaml", "name: a\nmodel: {provider: openai, model: m, base_url: 'https://gw.example/v1/', api_key_env: GW_KEY}\n")
	t.Setenv("OPENAI_API_KEY", "sk-must-not-reach-the-gateway")
	_, err := Load(context.Background(), gw, nil)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "model.api_key_env: the environment variable GW_KEY, which api_key_env names, is not set") {
		t.Errorf("api_key_env unset: Load = %v", err)
	}
}

// TestUnknownMCPToolsSpeakTheAgentFile names a tool the server lacks, in
// tools, in replay and in reconcile (a tool or its companion): the error is at that entry, in agent-file words, with
// the server's tools.
func TestUnknownMCPToolsSpeakTheAgentFile(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "v1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Description: "Says who."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "you"}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	for key, want := range map[string]string{
		"tools: [whoami, whoam]":     `10:23: tools.mcp[0].tools[1]: tools names the tool "whoam", which the MCP server "remote" does not offer (did you mean whoami?); its tools: whoami`,
		"replay: {who: replay_safe}": `10:21: tools.mcp[0].replay.who: replay names the tool "who", which the MCP server "remote" does not offer; its tools: whoami`,
		"reconcile: {whoami: whoam}": `10:27: tools.mcp[0].reconcile.whoami: reconcile names the tool "whoam", which the MCP server "remote" does not offer (did you mean whoami?); its tools: whoami`,
		"reconcile: {who: whoami}":   `10:24: tools.mcp[0].reconcile.who: reconcile names the tool "who", which the MCP server "remote" does not offer; its tools: whoami`,
	} {
		p := writeFile(t, "agent.yaml", scriptHead+"tools:\n  mcp:\n    - name: remote\n      url: "+hs.URL+"/mcp\n      "+key+"\n")
		_, err := Load(context.Background(), p, nil)
		var ute *mcpexec.UnknownToolError
		if !errors.As(err, &ute) || err.Error() != p+":"+want {
			t.Errorf("Load = %v\nwant %s:%s", err, p, want)
		}
	}
}

// TestUnusableMCPSchemaSpeaksTheAgentFile: a server tool whose schema
// cannot be used is reported in agent-file words, pointing at tools.
func TestUnusableMCPSchemaSpeaksTheAgentFile(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "v1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "broken", InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"$ref":"#/$defs/nowhere"}}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	p := writeFile(t, "agent.yaml", scriptHead+"tools:\n  mcp:\n    - name: remote\n      url: "+hs.URL+"/mcp\n")
	_, err := Load(context.Background(), p, nil)
	var use *mcpexec.UnusableSchemaError
	want := `8:7: tools.mcp[0]: the MCP server "remote" offers the tool "broken" with an input schema that cannot be used to check its arguments (`
	if !errors.As(err, &use) || !strings.HasPrefix(err.Error(), p+":"+want) || strings.Contains(err.Error(), "Options.") {
		t.Errorf("Load = %v\nwant %s:%s…", err, p, want)
	}
}

// TestAgentToolsAreTheExecutorsTools: the agent a file builds lists exactly
// what its executor lists, so a Runner accepts it.
func TestAgentToolsAreTheExecutorsTools(t *testing.T) {
	t.Parallel()
	for name, tools := range map[string]string{
		"shell": "tools:\n  shell: {dir: w, replay: replay_safe}\n",
		"none":  "",
	} {
		cfg, err := Load(context.Background(), writeFile(t, "agent.yaml", scriptHead+tools), nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		lister, ok := cfg.Executor.(polyloop.ToolLister)
		if !ok {
			t.Fatalf("%s: the executor %T lists no tools", name, cfg.Executor)
		}
		if got := lister.ToolSpecs(); len(got) != len(cfg.Agent.Tools) || (len(got) > 0 && got[0].Name != cfg.Agent.Tools[0].Name) {
			t.Errorf("%s: executor tools %+v, agent tools %+v", name, got, cfg.Agent.Tools)
		}
		cfg.Close()
	}
}
