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
		name   string
		err    error
		status polyloop.ActionStatus // empty: an error is returned
	}{
		{"connection closed", fmt.Errorf("calling: %w", mcp.ErrConnectionClosed), polyloop.EnvError},
		{"session missing", mcp.ErrSessionMissing, polyloop.EnvError},
		{"EOF", fmt.Errorf("read: %w", io.EOF), polyloop.EnvError},
		{"closed pipe", fmt.Errorf("calling: %w", io.ErrClosedPipe), polyloop.EnvError},
		{"broken pipe", fmt.Errorf("write: %w", syscall.EPIPE), polyloop.EnvError},
		{"method not found", fmt.Errorf("x: %w", &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound}), polyloop.NotExecuted},
		{"invalid params", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams}, polyloop.NotExecuted},
		{"parse error", &jsonrpc.Error{Code: jsonrpc.CodeParseError}, polyloop.EnvError},
		{"internal error", &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "oops"}, polyloop.Executed},
		{"rejected by transport", fmt.Errorf("POST: %w", &jsonrpc.Error{Code: -32005}), polyloop.EnvError},
		{"refused connection", fmt.Errorf("POST: %w: %w", &jsonrpc.Error{Code: -32005}, &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}), polyloop.EnvError},
		{"invalid params over HTTP", fmt.Errorf("POST: %w: %w", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams}, &jsonrpc.Error{Code: -32005}), polyloop.NotExecuted},
		{"unknown", bug, ""},
	}
	for _, tc := range cases {
		out, err := classify(context.Background(), "t", tc.err)
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
	if _, err := classify(ctx, "t", mcp.ErrConnectionClosed); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v, want context.Canceled", err)
	}
}
