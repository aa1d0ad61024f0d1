package shellexec_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/polyloop/polyloop/shellexec"
)

// TestCommandDiesWithItsDriver: SIGKILL of the process driving a command
// (no code of it runs after) ends the command's process group: the shell
// (Pdeathsig) and a child it started (the group's SIGHUP once orphaned), so
// a resumed run's replay never runs beside it. A shell that ignores SIGHUP
// still dies.
func TestCommandDiesWithItsDriver(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		command   string
		childDies bool // the child ignores SIGHUP when its shell does
	}{
		"a child in the background": {"echo $$ > shell.pid; sleep 600 & echo $! > child.pid; wait", true},
		"a child in the foreground": {"echo $$ > shell.pid; sh -c 'echo $$ > child.pid; exec sleep 600'; echo late", true},
		"a shell ignoring SIGHUP":   {"trap '' HUP; echo $$ > shell.pid; sleep 600 & echo $! > child.pid; wait", false},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			driver := exec.Command(exe)
			driver.Env = append(os.Environ(), driverEnv+"="+tc.command, driverDirEnv+"="+dir)
			if err := driver.Start(); err != nil {
				t.Fatal(err)
			}
			shell, child := readPid(t, filepath.Join(dir, "shell.pid")), readPid(t, filepath.Join(dir, "child.pid"))
			t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL); syscall.Kill(shell, syscall.SIGKILL) })
			if err := driver.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = driver.Wait()
			waitGone(t, shell)
			if tc.childDies {
				waitGone(t, child)
			}
		})
	}
}

// TestThreadExitsDoNotKillCommands: threads that end while a command runs
// (a goroutine exiting locked to its thread ends the thread) do not kill
// it, although the kernel sends Pdeathsig when the forking thread ends.
func TestThreadExitsDoNotKillCommands(t *testing.T) {
	t.Parallel()
	e := newExec(t, shellexec.Options{})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				done := make(chan struct{})
				go func() { runtime.LockOSThread(); close(done) }() // ends its thread
				<-done
				time.Sleep(time.Millisecond)
			}
		})
	}
	for i := range 30 {
		out := execute(t, e, code("sleep 0.05; echo ok"))
		if strings.TrimSpace(out.Observation) != "ok" {
			close(stop)
			wg.Wait()
			t.Fatalf("command %d, with threads ending around it: %+v", i+1, out)
		}
	}
	close(stop)
	wg.Wait()
}
