package mcpexec

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/polyloop/polyloop"
)

// tool is one server tool as the executor exposes it. Immutable.
type tool struct {
	spec   polyloop.ToolSpec // spec.Name is the exposed name: Options.Prefix + server
	server string            // the name the server knows it by
	schema *jsonschema.Resolved
}

// listTools reads the server's tool list (all pages) and builds the exposed
// tools, in the server's order, applying Options.Tools and Options.Replay.
func listTools(ctx context.Context, s *mcp.ClientSession, o *Options) ([]*tool, error) {
	var tools []*tool
	seen := map[string]bool{}
	var offered []string
	for t, err := range s.Tools(ctx, nil) {
		if err != nil {
			return nil, o.startError("listing the tools of", nil, err)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("mcpexec: %s lists the tool %q twice", o.identity(), t.Name)
		}
		seen[t.Name] = true
		offered = append(offered, t.Name)
		if o.Tools != nil && !slices.Contains(o.Tools, t.Name) {
			continue
		}
		tl, err := newTool(t, o.Prefix, o.Replay)
		if err != nil {
			return nil, fmt.Errorf("mcpexec: %s: %w", o.identity(), err)
		}
		tools = append(tools, tl)
	}
	for _, name := range o.Tools {
		if !seen[name] {
			return nil, &UnknownToolError{Option: "Tools", Tool: name, Server: o.identity(), Offered: offered}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(o.Replay)) {
		if !seen[name] {
			return nil, &UnknownToolError{Option: "Replay", Tool: name, Server: o.identity(), Offered: offered}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(o.Reconcile)) {
		for _, n := range []string{name, o.Reconcile[name]} {
			if !seen[n] {
				return nil, &UnknownToolError{Option: "Reconcile", Tool: n, Server: o.identity(), Offered: offered}
			}
		}
	}
	return tools, nil
}

func newTool(t *mcp.Tool, prefix string, overrides map[string]polyloop.ReplayPolicy) (*tool, error) {
	raw, err := json.Marshal(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("tool %q: encoding its input schema: %w", t.Name, err)
	}
	var schema jsonschema.Schema
	if err := json.Unmarshal(raw, &schema); err != nil {
		return nil, fmt.Errorf("tool %q: its input schema is not a JSON Schema: %w", t.Name, err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		return nil, &UnusableSchemaError{Tool: t.Name, Err: err}
	}
	var params bytes.Buffer
	if err := json.Compact(&params, raw); err != nil {
		return nil, fmt.Errorf("tool %q: %w", t.Name, err)
	}
	replay, ok := overrides[t.Name]
	if !ok {
		replay = fromAnnotations(t.Annotations)
	}
	return &tool{
		spec: polyloop.ToolSpec{
			Name:        prefix + t.Name,
			Description: t.Description,
			Parameters:  params.Bytes(),
			Replay:      replay,
		},
		server: t.Name,
		schema: resolved,
	}, nil
}

// fromAnnotations derives a replay policy from the server's hints: a tool
// that only reads, or whose repetition has no further effect, may be
// replayed.
func fromAnnotations(a *mcp.ToolAnnotations) polyloop.ReplayPolicy {
	if a != nil && (a.ReadOnlyHint || a.IdempotentHint) {
		return polyloop.ReplaySafe
	}
	return polyloop.NeverReplay
}

// validate checks arguments against the tool's input schema. It returns the
// arguments to send (absent arguments count as {}) or why they are refused.
func (t *tool) validate(raw json.RawMessage) (json.RawMessage, string) {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	var instance any
	if err := json.Unmarshal(raw, &instance); err != nil {
		return nil, fmt.Sprintf("arguments are not valid JSON: %v", err)
	}
	if _, ok := instance.(map[string]any); !ok {
		return nil, "arguments are not a JSON object"
	}
	if err := t.schema.Validate(instance); err != nil {
		return nil, fmt.Sprintf("arguments do not match the tool's input schema: %v", err)
	}
	return raw, ""
}
