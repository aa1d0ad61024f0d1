package mcpexec_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/polyloop/polyloop/mcpexec"
)

// TestNoElicitationOrSampling: an unattended loop can answer neither, so
// the client's initialize request advertises neither capability, with or
// without roots configured (the package doc says so).
func TestNoElicitationOrSampling(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string]mcpexec.Options{
		"no roots": {},
		"roots":    {Roots: []string{"file:///srv/project"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ct, srvT := mcp.NewInMemoryTransports()
			ss, err := newTestServer(&serverState{}).Connect(context.Background(), srvT, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Close()
			opts.Transport, opts.Identity = ct, "in-memory test server"
			e, err := mcpexec.New(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			init := ss.InitializeParams()
			if init == nil || init.Capabilities == nil {
				t.Fatal("the server saw no initialize capabilities")
			}
			caps := init.Capabilities
			if caps.Sampling != nil || caps.Elicitation != nil { //nolint:staticcheck // sampling is deprecated but still negotiated
				t.Errorf("the client advertises sampling %+v, elicitation %+v", caps.Sampling, caps.Elicitation) //nolint:staticcheck
			}
			raw, err := json.Marshal(caps)
			if err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{"sampling", "elicitation"} {
				if strings.Contains(string(raw), `"`+key+`"`) {
					t.Errorf("the client's capabilities on the wire name %s: %s", key, raw)
				}
			}
			if wantRoots := len(opts.Roots) > 0; (caps.RootsV2 != nil) != wantRoots {
				t.Errorf("roots advertised: %v, want %v (%s)", caps.RootsV2 != nil, wantRoots, raw)
			}
		})
	}
}
