//go:build unix

package mcpexec_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/polyloop/polyloop/mcpexec"
)

// TestStdioServerLeadsItsOwnGroup: a stdio server is not in this process's
// group (it is in a group of its own, which it leads), so a terminal's Ctrl-C to the foreground group does not reach it;
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
	group, err := syscall.Getpgid(pid)
	if err != nil || group == syscall.Getpgrp() {
		t.Errorf("the server %d is in group %d (%v); this process's group is %d: want a group of its own", pid, group, err, syscall.Getpgrp())
	}
	if pgid, err := syscall.Getpgid(child); err != nil || pgid != group {
		t.Fatalf("the server's child %d is in group %d (%v), want the server's %d", child, pgid, err, group)
	}
	_ = e.Close()
	waitDead(t, pid)
	waitDead(t, child)
}

// TestStdioServerDiesWithItsDriver: SIGKILL of the process that started a
// stdio server (no code of it runs after) ends the server and what it
// started in its group, whether or not that process ignored SIGHUP (nohup,
// CI runners) and whoever adopts the orphans.
func TestStdioServerDiesWithItsDriver(t *testing.T) {
	t.Parallel()
	for name, ignoreHUP := range map[string]bool{"SIGHUP default": false, "SIGHUP ignored": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			pidFile := filepath.Join(t.TempDir(), "child")
			driver := exec.Command(exe)
			if ignoreHUP { // the shell execs the driver: the disposition is inherited
				driver = exec.Command("/bin/sh", "-c", `trap '' HUP; exec "$0"`, exe)
			}
			driver.Env = append(os.Environ(), serverModeEnv+"=driver", childPIDFileEnv+"="+pidFile)
			if err := driver.Start(); err != nil {
				t.Fatal(err)
			}
			server, child := readPID(t, pidFile+".server"), readPID(t, pidFile)
			t.Cleanup(func() { syscall.Kill(server, syscall.SIGKILL); syscall.Kill(child, syscall.SIGKILL) })
			if err := driver.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = driver.Wait()
			waitDead(t, server)
			waitDead(t, child)
		})
	}
}

// readPID waits for a pid in the file path.
func readPID(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if pid, perr := strconv.Atoi(string(b)); err == nil && perr == nil && pid > 0 {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
