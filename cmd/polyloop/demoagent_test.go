package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/polyloop/polyloop/agentfile"
	"github.com/polyloop/polyloop/internal/agentschema"
)

// TestDemoAgentIsAValidAgentFile: the demo's agent, which users see in its
// output, passes polyloop's check and the agent file's JSON Schema.
func TestDemoAgentIsAValidAgentFile(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "demo.yaml")
	if err := os.WriteFile(p, []byte(demoAgent), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := agentfile.Check(p); err != nil {
		t.Fatalf("check: %v", err)
	}
	rs, err := agentschema.Load("../../docs/agent-file.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := agentschema.Validate(rs, []byte(demoAgent)); err != nil {
		t.Errorf("the demo agent does not match docs/agent-file.schema.json: %v", err)
	}
}
