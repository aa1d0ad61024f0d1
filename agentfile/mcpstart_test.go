package agentfile

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPServersStartTogether: the servers of a file start at once, not one
// after another — each of these two answers its first request only once
// the other has received its own (a barrier: started one after another,
// the first would wait in vain) — and Load says what it starts and when
// each is ready.
func TestMCPServersStartTogether(t *testing.T) {
	t.Parallel()
	var arrived sync.WaitGroup
	arrived.Add(2)
	together := make(chan struct{})
	var alone atomic.Bool // a server's first request waited in vain for the other's
	go func() { arrived.Wait(); close(together) }()
	barrier := func(answer string) string {
		srv := mcp.NewServer(&mcp.Implementation{Name: "whoami-" + answer, Version: "v1"}, nil)
		mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Description: "Says who."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: answer}}}, nil, nil
			})
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
		var once sync.Once
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			once.Do(func() {
				arrived.Done()
				select {
				case <-together:
				case <-time.After(5 * time.Second):
					alone.Store(true)
				}
			})
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(hs.Close)
		return hs.URL + "/mcp"
	}
	a, b := barrier("alpha"), barrier("beta")
	src := scriptHead + "tools:\n  mcp:\n    - {name: a, url: '" + a + "', prefix: a_}\n    - {name: b, url: '" + b + "', prefix: b_}\n"
	var mu sync.Mutex
	var lines []string
	cfg, err := Load(context.Background(), writeFile(t, "agent.yaml", src), &Options{Progress: func(l string) {
		mu.Lock()
		lines = append(lines, l)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	if alone.Load() {
		t.Fatal("the servers were not started together: one waited 5 s for the other in vain")
	}
	all := strings.Join(lines, "\n")
	for _, want := range []string{`starting MCP server "a": ` + a, `starting MCP server "b": ` + b, `MCP server "a" ready: 1 tools`, `MCP server "b" ready: 1 tools`} {
		if !strings.Contains(all, want) {
			t.Errorf("progress lacks %q:\n%s", want, all)
		}
	}
}
