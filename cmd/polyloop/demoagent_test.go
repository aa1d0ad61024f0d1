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

// TestDemoSaysWhatItSaw: the demo says the killed attempt had appended its
// line only when it saw the line in the sandbox's files.
func TestDemoSaysWhatItSaw(t *testing.T) {
	dir := t.TempDir()
	if got := demoJournalSeen(dir); got != demoSeenUnknown {
		t.Errorf("no sandbox files: %v", got)
	}
	work := filepath.Join(dir, "envs", "e1", "rw", "upper", "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "journal.txt"), []byte("the log is the source of truth\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := demoJournalSeen(dir); got != demoSeenNot || strings.Contains(demoKilledAttempt(got), "had appended") {
		t.Errorf("journal without the line: %v, %q", got, demoKilledAttempt(got))
	}
	if err := os.WriteFile(filepath.Join(work, "journal.txt"), []byte("the log is the source of truth\n"+demoKilledLine+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := demoJournalSeen(dir); got != demoSeenAppended || !strings.Contains(demoKilledAttempt(got), "had appended its line before the kill") {
		t.Errorf("journal with the line: %v, %q", got, demoKilledAttempt(got))
	}
	if strings.Contains(demoKilledAttempt(demoSeenUnknown), "had appended its line before") {
		t.Error("the demo claims an append it did not see")
	}
}
