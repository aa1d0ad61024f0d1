package agentfile

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/polyloop/polyloop"
)

// TestMCPHeadersEnv loads an agent whose MCP server is reached over
// streamable HTTP with a header read from the environment: the header
// reaches the server, and neither its value nor its variable's value is in
// the server's description (the snapshot).
func TestMCPHeadersEnv(t *testing.T) {
	t.Parallel()
	const token = "Bearer t0k3n-5b4a39281706f8e7"
	var mu sync.Mutex
	var seen []string
	srv := mcp.NewServer(&mcp.Implementation{Name: "auth-test", Version: "v1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Description: "Says who."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "you"}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	defer hs.Close()
	src := scriptHead + "tools:\n  mcp:\n    - name: remote\n      url: " + hs.URL + "/mcp\n      headers_env: {Authorization: REMOTE_MCP_AUTH}\n"
	file := writeFile(t, "agent.yaml", src)
	getenv := func(k string) string {
		if k == "REMOTE_MCP_AUTH" {
			return token
		}
		return ""
	}
	cfg, err := Load(context.Background(), file, &Options{Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	out, err := cfg.Executor.Execute(context.Background(), polyloop.Action{Tool: "whoami", Args: json.RawMessage(`{}`)})
	if err != nil || out.Status != polyloop.Executed {
		t.Fatalf("whoami: %+v, %v", out, err)
	}
	mu.Lock()
	for i, got := range seen {
		if got != token {
			t.Errorf("request %d has Authorization %q, want the value of REMOTE_MCP_AUTH", i, got)
		}
	}
	mu.Unlock()
	if d := polyloop.Describe(cfg.Executor); strings.Contains(string(d.Config), "t0k3n") {
		t.Errorf("the header's value is in the executor's description: %s", d.Config)
	}

	_, err = Load(context.Background(), file, &Options{Getenv: func(string) string { return "" }})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "REMOTE_MCP_AUTH") {
		t.Errorf("Load with the variable unset: %v, want an error naming it", err)
	}
}

func TestCheckHeadersEnv(t *testing.T) {
	t.Parallel()
	for name, tt := range map[string]struct{ mcp, want string }{
		"on a command":   {"{name: x, command: srv, headers_env: {Authorization: X_AUTH}}", "headers_env applies to a url"},
		"bad header":     {"{name: x, url: 'https://h/mcp', headers_env: {'Bad Header': X_AUTH}}", "expected an HTTP header name"},
		"value, not env": {"{name: x, url: 'https://h/mcp', headers_env: {X-Team: 'the team'}}", "expected the name of the environment variable"},
	} {
		_, err := Check(writeFile(t, "agent.yaml", scriptHead+"tools:\n  mcp:\n    - "+tt.mcp+"\n"))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Check = %v, want %q", name, err, tt.want)
		}
	}
	ok := scriptHead + "tools:\n  mcp:\n    - {name: x, url: 'https://h/mcp', headers_env: {Authorization: X_AUTH, X-Api-Key: X_KEY}}\n"
	if _, err := Check(writeFile(t, "agent.yaml", ok)); err != nil {
		t.Errorf("Check: %v", err)
	}
}

// TestCheckRefusesKeyishQueryParameters checks that a URL entering the
// snapshot cannot carry a key as a query parameter.
func TestCheckRefusesKeyishQueryParameters(t *testing.T) {
	t.Parallel()
	for name, src := range map[string]string{
		"base_url": "name: a\nmodel: {provider: openai, model: m, base_url: 'https://gw.example/v1?api_key=abc'}\n",
		"mcp url":  scriptHead + "tools:\n  mcp:\n    - {name: x, url: 'https://h/mcp?token=abc'}\n",
	} {
		_, err := Check(writeFile(t, "agent.yaml", src))
		if !errors.Is(err, ErrSecret) {
			t.Errorf("%s: Check = %v, want ErrSecret", name, err)
		}
	}
	src := "name: a\nmodel: {provider: openai, model: m, base_url: 'https://gw.example/v1?api-version=2024-06-01'}\n"
	if _, err := Check(writeFile(t, "agent.yaml", src)); err != nil {
		t.Errorf("a query without a key: Check = %v", err)
	}
}
