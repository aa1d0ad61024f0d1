package mcpexec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/polyloop/polyloop"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	bug := errors.New("something unforeseen")
	cases := []struct {
		name    string
		err     error
		refused bool                  // the client refused a server request during the call
		status  polyloop.ActionStatus // empty: an error is returned
	}{
		{"connection closed", fmt.Errorf("calling: %w", mcp.ErrConnectionClosed), false, polyloop.EnvError},
		{"session missing", mcp.ErrSessionMissing, false, polyloop.EnvError},
		{"EOF", fmt.Errorf("read: %w", io.EOF), false, polyloop.EnvError},
		{"closed pipe", fmt.Errorf("calling: %w", io.ErrClosedPipe), false, polyloop.EnvError},
		{"broken pipe", fmt.Errorf("write: %w", syscall.EPIPE), false, polyloop.EnvError},
		{"method not found", fmt.Errorf("x: %w", &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound}), false, polyloop.NotExecuted},
		{"invalid params", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams}, false, polyloop.NotExecuted},
		{"parse error", &jsonrpc.Error{Code: jsonrpc.CodeParseError}, false, polyloop.EnvError},
		{"internal error", &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "oops"}, false, polyloop.Executed},
		{"rejected by transport", fmt.Errorf("POST: %w", &jsonrpc.Error{Code: -32005}), false, polyloop.EnvError},
		{"refused connection", fmt.Errorf("POST: %w: %w", &jsonrpc.Error{Code: -32005}, &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}), false, polyloop.EnvError},
		{"invalid params over HTTP", fmt.Errorf("POST: %w: %w", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams}, &jsonrpc.Error{Code: -32005}), false, polyloop.NotExecuted},
		{"unknown", bug, false, ""},
		{"invalid params after a refusal", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams}, true, polyloop.Executed},
		{"method not found after a refusal", &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound}, true, polyloop.Executed},
		{"parse error after a refusal", &jsonrpc.Error{Code: jsonrpc.CodeParseError}, true, polyloop.EnvError},
	}
	for _, tc := range cases {
		out, err := classify(context.Background(), "t", tc.err, tc.refused)
		if tc.status == "" {
			if !errors.Is(err, bug) {
				t.Errorf("%s: err = %v, want the error returned", tc.name, err)
			}
			continue
		}
		if err != nil || out.Status != tc.status {
			t.Errorf("%s: outcome %+v, err %v; want %q", tc.name, out, err, tc.status)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := classify(ctx, "t", mcp.ErrConnectionClosed, false); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v, want context.Canceled", err)
	}
}
