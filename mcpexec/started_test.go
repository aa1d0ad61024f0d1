package mcpexec_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/mcpexec"
)

// startedServer's tools act (count an effect), then show it — progress on
// the call's token, or a roots/list request the client answers — and fail
// with invalid params (-32602), as a tool whose own argument check comes
// late does. "refuse" fails the same way before acting.
func startedServer(effects, progressSent *atomic.Int32) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "started-server", Version: "v1"}, nil)
	invalid := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad record id"}
	tool := func(name string, h func(context.Context, *mcp.CallToolRequest) error) {
		s.AddTool(&mcp.Tool{Name: name, Description: name, InputSchema: map[string]any{"type": "object"}},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if name != "refuse" {
					effects.Add(1)
				}
				if err := h(ctx, req); err != nil {
					return nil, err
				}
				return nil, invalid
			})
	}
	tool("progress_then_fail", func(ctx context.Context, req *mcp.CallToolRequest) error {
		token := req.Params.GetProgressToken()
		if token == nil {
			return nil // a server reports progress only on a token the client gave
		}
		progressSent.Add(1)
		return req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: 1, Total: 2})
	})
	tool("roots_then_fail", func(ctx context.Context, req *mcp.CallToolRequest) error {
		_, err := req.Session.ListRoots(ctx, nil)
		return err
	})
	tool("refuse", func(context.Context, *mcp.CallToolRequest) error { return nil })
	return s
}

// TestServerMessagesDuringACallMeanStarted: a call whose server sent this
// client progress, or a request the client answered, before failing with
// -32602 had started: Executed, never NotExecuted. The same error with
// nothing before it is NotExecuted. Many calls, so that the progress
// notification is counted before the call's answer is taken, every time;
// in memory and over streamable HTTP (by URL, and as a transport given).
func TestServerMessagesDuringACallMeanStarted(t *testing.T) {
	t.Parallel()
	connect := map[string]func(t *testing.T, srv *mcp.Server) mcpexec.Options{
		"in memory": func(t *testing.T, srv *mcp.Server) mcpexec.Options {
			ct, srvT := mcp.NewInMemoryTransports()
			ss, err := srv.Connect(context.Background(), srvT, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = ss.Close() })
			return mcpexec.Options{Transport: ct, Identity: "started"}
		},
		"streamable HTTP": func(t *testing.T, srv *mcp.Server) mcpexec.Options {
			return mcpexec.Options{URL: serveHTTP(t, srv)}
		},
		"streamable HTTP transport": func(t *testing.T, srv *mcp.Server) mcpexec.Options {
			return mcpexec.Options{Transport: &mcp.StreamableClientTransport{Endpoint: serveHTTP(t, srv)}, Identity: "started"}
		},
	}
	for name, opts := range connect {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var effects, progressSent atomic.Int32
			o := opts(t, startedServer(&effects, &progressSent))
			o.Roots = []string{"file:///srv"}
			e, err := mcpexec.New(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close() })
			const n = 100
			for i := range n {
				for _, tool := range []string{"progress_then_fail", "roots_then_fail"} {
					if out := execute(t, e, call(tool, `{}`)); out.Status != polyloop.Executed {
						t.Fatalf("call %d of %s: %+v, want executed (the tool had acted)", i+1, tool, out)
					}
				}
			}
			if got := progressSent.Load(); got != n {
				t.Errorf("the server sent progress on %d of %d calls: the client gave no progress token", got, n)
			}
			if out := execute(t, e, call("refuse", `{}`)); out.Status != polyloop.NotExecuted {
				t.Errorf("refuse: %+v, want not_executed (the server sent nothing during it)", out)
			}
			if got := effects.Load(); got != 2*n {
				t.Errorf("%d effects, want %d", got, 2*n)
			}
		})
	}
}

// serveHTTP serves srv over streamable HTTP and returns its URL.
func serveHTTP(t *testing.T, srv *mcp.Server) string {
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}
