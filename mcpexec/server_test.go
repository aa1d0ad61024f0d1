package mcpexec_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/polyloop/polyloop/mcpexec"
)

// serverModeEnv makes the test binary run as an MCP server over stdio: the
// subprocess tests re-execute themselves with it.
const serverModeEnv = "MCPEXEC_TEST_SERVER"

// childPIDFileEnv names the file where the "forks" server writes its
// child's pid (and its own, in the file's name + ".server").
const childPIDFileEnv = "MCPEXEC_TEST_CHILD_PID_FILE"

func TestMain(m *testing.M) {
	switch os.Getenv(serverModeEnv) {
	case "":
		os.Exit(m.Run())
	case "dies": // writes a reason to stderr and exits before speaking MCP
		fmt.Fprintln(os.Stderr, strings.Repeat("noise ", 2000))
		fmt.Fprintln(os.Stderr, "fatal: cannot open the database /nonexistent/db.sqlite")
		os.Exit(3)
	case "forks": // starts a child in its process group, writes its and the child's pids to files, serves
		child := exec.Command("sleep", "600")
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		pidFile := os.Getenv(childPIDFileEnv)
		err := errors.Join(os.WriteFile(pidFile+".server", []byte(strconv.Itoa(os.Getpid())), 0o644),
			os.WriteFile(pidFile, []byte(strconv.Itoa(child.Process.Pid)), 0o644))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = newTestServer(&serverState{}).Run(context.Background(), &mcp.StdioTransport{})
		os.Exit(0)
	case "driver": // drives a "forks" server, as polyloop run would, until it is killed
		exe, err := os.Executable()
		if err == nil {
			_, err = mcpexec.New(context.Background(), mcpexec.Options{Command: []string{exe},
				Env: []string{serverModeEnv + "=forks", childPIDFileEnv + "=" + os.Getenv(childPIDFileEnv), "PATH=" + os.Getenv("PATH")}})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		select {}
	case "payments": // make_payment and its companion lookup_payment (reconcile_test.go)
		_ = newPaymentServer().Run(context.Background(), &mcp.StdioTransport{})
		os.Exit(0)
	case "stubborn": // ignores SIGTERM and outlives its stdin
		signal.Ignore(syscall.SIGTERM)
		_ = newTestServer(&serverState{}).Run(context.Background(), &mcp.StdioTransport{})
		select {}
	default:
		if err := newTestServer(&serverState{}).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// serverState is what the test server lets the tests observe.
type serverState struct {
	calls     atomic.Int32  // tools/call requests received
	started   chan struct{} // closed when the slow tool starts (if not nil)
	cancelled chan struct{} // closed when the slow tool sees its cancellation (if not nil)
	rootsCap  atomic.Bool   // the client advertised roots
}

type echoArgs struct {
	Text  string `json:"text" jsonschema:"the text to echo"`
	Times int    `json:"times,omitempty" jsonschema:"how many times"`
}

type sumOut struct {
	Sum int `json:"sum"`
}

func ptr[T any](v T) *T { return &v }

// newTestServer builds the server every test talks to.
func newTestServer(st *serverState) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "polyloop-test-server", Version: "v0.0.1"}, nil)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				st.calls.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes text.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, any, error) {
			out := in.Text
			for i := 1; i < in.Times; i++ {
				out += in.Text
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out}}}, nil, nil
		})
	// big returns a text of n copies of char (bound_test.go).
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Returns a long text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			N    int    `json:"n"`
			Char string `json:"char"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat(in.Char, in.N)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "sum", Description: "Adds.", Annotations: &mcp.ToolAnnotations{IdempotentHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct{ A, B int }) (*mcp.CallToolResult, sumOut, error) {
			return nil, sumOut{in.A + in.B}, nil
		})
	// readfile answers as server-filesystem does: the text, and the same
	// text again as structured content.
	mcp.AddTool(s, &mcp.Tool{Name: "readfile", Description: "Reads a file."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			const text = "line one\nline two"
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}},
				map[string]any{"content": text}, nil
		})
	// stat's structured content has a number the text lacks.
	mcp.AddTool(s, &mcp.Tool{Name: "stat", Description: "Sizes a file."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a.txt"}}},
				map[string]any{"name": "a.txt", "size": 42}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "write", Description: "Writes; fails on demand.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct{ Fail bool }) (*mcp.CallToolResult, any, error) {
			if in.Fail {
				return nil, nil, errors.New("disk full")
			}
			return nil, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "picture", Description: "Returns an image and a text."},
		func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "a red dot:"},
				&mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, 1234)},
				&mcp.AudioContent{MIMEType: "audio/wav", Data: make([]byte, 10)},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///blob", MIMEType: "application/zip", Blob: make([]byte, 7)}},
				&mcp.ResourceLink{URI: "file:///doc.txt", Name: "doc", Size: ptr[int64](99)},
			}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Waits until cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if st.started != nil {
				close(st.started)
			}
			<-ctx.Done()
			if st.cancelled != nil {
				close(st.cancelled)
			}
			return nil, nil, ctx.Err()
		})
	mcp.AddTool(s, &mcp.Tool{Name: "info", Description: "Reports the server's pid and call count."},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			if p := req.Session.InitializeParams(); p != nil && p.Capabilities != nil {
				st.rootsCap.Store(p.Capabilities.RootsV2 != nil)
			}
			text := fmt.Sprintf("pid=%d calls=%d roots=%v", os.Getpid(), st.calls.Load(), st.rootsCap.Load())
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		})
	raw := func(name string, err error) {
		s.AddTool(&mcp.Tool{Name: name, Description: "Fails at the protocol level.", InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, err })
	}
	raw("rpc_invalid_params", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no such record"})
	raw("rpc_invalid_request", &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "malformed"})
	raw("rpc_plain_error", errors.New("handler crashed"))
	return s
}
