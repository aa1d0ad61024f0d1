//go:build unix

package mcpexec_test

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/polyloop/polyloop/mcpexec"
)

// TestStdioServerLeadsItsOwnGroup: a stdio server is not in this process's
// group, so a terminal's Ctrl-C to the foreground group does not reach it;
// and Close ends the whole group: a child the server started, which a
// closed stdin does not end, is killed too.
func TestStdioServerLeadsItsOwnGroup(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "child")
	e, err := mcpexec.New(t.Context(), mcpexec.Options{Command: []string{exe},
		Env: []string{serverModeEnv + "=forks", childPIDFileEnv + "=" + pidFile, "PATH=" + os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	pid, _, _ := info(t, e)
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid || pgid == syscall.Getpgrp() {
		t.Errorf("the server %d is in group %d (%v); this process's group is %d: want a group of its own", pid, pgid, err, syscall.Getpgrp())
	}
	if pgid, err := syscall.Getpgid(child); err != nil || pgid != pid {
		t.Fatalf("the server's child %d is in group %d (%v), want the server's %d", child, pgid, err, pid)
	}
	_ = e.Close()
	waitDead(t, pid)
	waitDead(t, child)
}
