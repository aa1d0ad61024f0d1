package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polyloop/polyloop/agentfile"
	"github.com/polyloop/polyloop/internal/agentschema"
)

// TestDemoAgentIsAValidAgentFile: the demo's agent, which users see in its
// output, passes polyloop's check and the agent file's JSON Schema.
func TestDemoAgentIsAValidAgentFile(t *testing.T) {
	t.Parallel()
	for _, text := range []string{demoAgent, demoSandboxAgent} {
		p := filepath.Join(t.TempDir(), "demo.yaml")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := agentfile.Check(p); err != nil {
			t.Fatalf("check: %v", err)
		}
		rs, err := agentschema.Load("../../docs/agent-file.schema.json")
		if err != nil {
			t.Fatal(err)
		}
		if err := agentschema.Validate(rs, []byte(text)); err != nil {
			t.Errorf("the demo agent does not match docs/agent-file.schema.json: %v", err)
		}
	}
}

// TestDemoWithoutSandbox: where bubblewrap is missing, the demo names what
// to install for its sandbox part (and runs the rest on the host).
func TestDemoWithoutSandbox(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	images, missing := demoSandbox(t.TempDir())
	if images != "" || !strings.Contains(missing, "apt-get install bubblewrap") {
		t.Fatalf("images %q, missing %q", images, missing)
	}
}
