package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestInterruptWhileMCPServerStarts: Ctrl-C while an MCP server is still
// starting (it never answers initialize) is an interruption — exit 130,
// said as such — not an error of the agent file (exit 2 with its line and
// column).
func TestInterruptWhileMCPServerStarts(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("polyloop")
	if err != nil {
		t.Fatalf("polyloop is not on PATH (TestMain installs it): %v", err)
	}
	dir := t.TempDir()
	agent := "name: slow-tools\nmodel:\n  provider: script\n  script:\n    - {text: done}\nlimits: {max_steps: 3}\n" +
		"tools:\n  mcp:\n    - name: slow\n      command: sh\n      args: [-c, 'touch started; exec sleep 60']\n"
	if err := os.WriteFile(filepath.Join(dir, "mcp-long.yaml"), []byte(agent), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "mcp-long.yaml", "task")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "POLYLOOP_STORE=sqlite:"+filepath.Join(dir, "store.db"), "NO_COLOR=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(dir, "started") // the server process is up, the CLI waits for its answer
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(mark); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("the MCP server never started")
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
		t.Fatalf("exit code %d, want %d; stderr:\n%s", code, exitInterrupted, stderr.String())
	}
	if !strings.Contains(stderr.String(), "interrupted while starting the tools of mcp-long.yaml") ||
		regexp.MustCompile(`mcp-long\.yaml:\d+:\d+`).MatchString(stderr.String()) {
		t.Errorf("stderr does not say it was interrupted, or blames the file:\n%s", stderr.String())
	}
}
