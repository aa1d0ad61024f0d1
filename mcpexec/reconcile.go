package mcpexec

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/polyloop/polyloop"
)

// MetaKey is the key, in a tools/call request's _meta, of the action's
// idempotency key (polyloop.IdempotencyKeyFor): a server passes it on to
// the API it calls, or keys its own effect with it.
const MetaKey = "polyloop/idempotency_key"

var (
	_ polyloop.Reconciler     = (*Executor)(nil)
	_ polyloop.ReconcileScope = (*Executor)(nil)
)

// Reconciles implements polyloop.ReconcileScope: the tools given a
// companion (Options.Reconcile).
func (e *Executor) Reconciles(a polyloop.Action) bool {
	_, ok := e.reconcile[a.Tool]
	return ok && !a.IsCode()
}

// Reconcile implements polyloop.Reconciler by calling the tool's companion
// (Options.Reconcile) with {"idempotency_key": q.Key}; without one, the
// verdict is unknown.
func (e *Executor) Reconcile(ctx context.Context, q polyloop.ReconcileQuery) (polyloop.Verdict, error) {
	if err := ctx.Err(); err != nil {
		return polyloop.Verdict{}, fmt.Errorf("mcpexec: %w", err)
	}
	companion, ok := e.reconcile[q.Action.Tool]
	if !ok || q.Action.IsCode() {
		return polyloop.Verdict{Kind: polyloop.VerdictUnknown, Said: fmt.Sprintf("tool %q has no companion to reconcile it", q.Action.Tool)}, nil
	}
	params := &mcp.CallToolParams{Name: companion, Arguments: map[string]any{"idempotency_key": q.Key},
		Meta: mcp.Meta{MetaKey: q.Key}}
	cctx, cancel, _ := withTimeout(ctx, e.callTimeout, "the call timeout")
	defer cancel()
	res, err := e.session.CallTool(cctx, params)
	if err != nil {
		return polyloop.Verdict{}, fmt.Errorf("mcpexec: reconcile %q with %q: %w", q.Action.Tool, companion, err)
	}
	if res.IsError {
		return polyloop.Verdict{}, fmt.Errorf("mcpexec: reconcile %q: %q answered an error: %.300s", q.Action.Tool, companion, render(res))
	}
	raw := []byte(textOf(res))
	if res.StructuredContent != nil {
		if raw, err = json.Marshal(res.StructuredContent); err != nil {
			return polyloop.Verdict{}, fmt.Errorf("mcpexec: reconcile %q: %w", q.Action.Tool, err)
		}
	}
	v, err := polyloop.ParseVerdict(raw)
	if err != nil {
		return polyloop.Verdict{}, fmt.Errorf("mcpexec: reconcile %q: %q answered %.300q: %w", q.Action.Tool, companion, raw, err)
	}
	if v.Outcome != nil && v.Outcome.Status == polyloop.Executed {
		v.Outcome.Observation, v.Outcome.TruncatedChars = boundText(v.Outcome.Observation)
	}
	return v, nil
}

// textOf is the text content of a result.
func textOf(res *mcp.CallToolResult) string {
	var s string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			s += t.Text
		}
	}
	return s
}
