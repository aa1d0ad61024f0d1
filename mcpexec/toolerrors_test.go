package mcpexec_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/mcpexec"
)

// TestUnknownToolsAreTypedErrors: naming a tool the server lacks, in
// Options.Tools or Options.Replay, is an *UnknownToolError that says which
// option, which tool and what the server offers, so that a caller (the
// agent file) can say it in its own words.
func TestUnknownToolsAreTypedErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for option, opts := range map[string]mcpexec.Options{
		"Replay": {Replay: map[string]polyloop.ReplayPolicy{"nope": polyloop.ReplaySafe}},
		"Tools":  {Tools: []string{"echo", "nope"}},
	} {
		ct, srvT := mcp.NewInMemoryTransports()
		ss, err := newTestServer(&serverState{}).Connect(ctx, srvT, nil)
		if err != nil {
			t.Fatal(err)
		}
		opts.Transport = ct
		opts.Identity = "test server"
		e, err := mcpexec.New(ctx, opts)
		var ute *mcpexec.UnknownToolError
		if !errors.As(err, &ute) {
			if e != nil {
				e.Close()
			}
			t.Fatalf("%s: New = %v, want an *UnknownToolError", option, err)
		}
		if ute.Option != option || ute.Tool != "nope" || ute.Server != "test server" || !slices.Contains(ute.Offered, "echo") {
			t.Errorf("%s: %+v", option, ute)
		}
		ss.Close()
	}
}

// TestUnusableSchemaIsATypedError: a tool whose input schema cannot be
// resolved is an *UnusableSchemaError naming the tool.
func TestUnusableSchemaIsATypedError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := mcp.NewServer(&mcp.Implementation{Name: "bad-schema", Version: "v1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "broken", InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"$ref":"#/$defs/nowhere"}}}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	ct, srvT := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, srvT, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	e, err := mcpexec.New(ctx, mcpexec.Options{Transport: ct})
	var use *mcpexec.UnusableSchemaError
	if !errors.As(err, &use) || use.Tool != "broken" || use.Err == nil {
		if e != nil {
			e.Close()
		}
		t.Fatalf("New = %v, want an *UnusableSchemaError for broken", err)
	}
}
