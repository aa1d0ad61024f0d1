package mcpexec

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// refusals counts the server-to-client requests (elicitation, sampling,
// roots, any method but ping) that this client answered with an error. A
// tool that asks the client for something is running: when such a refusal
// happens while a call is in flight, the server's error answering the call
// may be the relayed refusal, and the call cannot be NotExecuted. The count
// is per session, not per call (the protocol does not tie a stdio request to
// the call it serves), so a refusal made for one call makes every call in
// flight at that time count as started: the safe direction.
type refusals struct {
	n atomic.Int64
}

// count reads the number of refusals so far.
func (r *refusals) count() int64 { return r.n.Load() }

// middleware wraps the client's handling of what the server sends it.
func (r *refusals) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil && method != "ping" && !strings.HasPrefix(method, "notifications/") {
			r.n.Add(1)
		}
		return res, err
	}
}
