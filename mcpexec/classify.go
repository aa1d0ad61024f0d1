package mcpexec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/polyloop/polyloop"
)

// classify maps the error of a tools/call to an outcome, or returns it when
// it is a cancellation or an error the executor does not know. It looks at
// error identities and types only, never at their text. started says that
// the server sent a sign of a tool at work while the call was in flight
// (signs.go): a request, progress or a log message.
func classify(ctx context.Context, name string, err error, started bool) (polyloop.ActionOutcome, error) {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return polyloop.ActionOutcome{}, fmt.Errorf("mcpexec: tool %q: %w", name, errors.Join(ctxErr, err))
	}
	if connectionGone(err) {
		return outcome(polyloop.EnvError, "tool %q: the server connection is gone: %v", name, err), nil
	}
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return fromRPC(name, rpc, started), nil
	}
	return polyloop.ActionOutcome{}, fmt.Errorf("mcpexec: tool %q: %w", name, err)
}

// Error codes the SDK's JSON-RPC layer uses for its own failures
// (internal/jsonrpc2, not exported): the client or server closing, and a
// request the transport could not deliver or that the server turned away at
// the HTTP level (connection refused, 502, 503, 504, 429).
const (
	codeClientClosing = -32003
	codeServerClosing = -32004
	codeRejected      = -32005
)

// fromRPC maps a JSON-RPC error answering the call. Method not found and
// invalid params mean the server refused the call before running it —
// unless the server showed a tool at work during the call (a request to
// this client, progress, a log message): then the tool may have started,
// the error may be a refusal of this client's relayed, and the call is
// Executed.
func fromRPC(name string, rpc *jsonrpc.Error, started bool) polyloop.ActionOutcome {
	switch rpc.Code {
	case jsonrpc.CodeMethodNotFound, jsonrpc.CodeInvalidParams:
		if started {
			return outcome(polyloop.Executed, "tool %q had started (the server sent a request, progress or a log message "+
				"during the call), then failed (JSON-RPC error %d): %s", name, rpc.Code, rpc.Message)
		}
		return outcome(polyloop.NotExecuted, "tool %q: the server refused the call (JSON-RPC error %d): %s", name, rpc.Code, rpc.Message)
	case jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest:
		return outcome(polyloop.EnvError, "tool %q: protocol failure (JSON-RPC error %d): %s", name, rpc.Code, rpc.Message)
	case codeClientClosing, codeServerClosing, codeRejected:
		return outcome(polyloop.EnvError, "tool %q: the server cannot be reached (error %d): %s", name, rpc.Code, rpc.Message)
	}
	return outcome(polyloop.Executed, "error (JSON-RPC error %d): %s", rpc.Code, rpc.Message)
}

// connectionGone reports the known ways a session dies: closed connection or
// pipe, server process gone (end of its output, broken pipe), network
// failure.
func connectionGone(err error) bool {
	var netErr net.Error
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, mcp.ErrSessionMissing) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.ErrClosedPipe) ||
		errors.Is(err, os.ErrClosed) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.As(err, &netErr)
}
