package mcpexec_test

import (
	"context"
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
