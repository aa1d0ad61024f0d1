package shellexec_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/polyloop/polyloop/shellexec"
)

// TestCommandDiesWithItsDriver: SIGKILL of the process driving a command
// (no code of it runs after) ends the command's whole process group — the
// shell, a child it started, the group's watchdog — so a resumed run's
// replay never runs beside it. It holds whatever the driver inherited: a
// SIGHUP ignored (nohup, tmux scripts, CI runners) changes nothing, nor
// does a shell or child that ignores SIGHUP, nor who adopts the orphans (a
// subreaper of this session: the orphaned-group SIGHUP never comes then).
func TestCommandDiesWithItsDriver(t *testing.T) {
	t.Parallel()
	for name, command := range map[string]string{
		"a child in the background": "echo $$ > shell.pid; sleep 600 & echo $! > child.pid; wait",
		"a child in the foreground": "echo $$ > shell.pid; sh -c 'echo $$ > child.pid; exec sleep 600'; echo late",
		"a shell ignoring SIGHUP":   "trap '' HUP; echo $$ > shell.pid; sleep 600 & echo $! > child.pid; wait",
		"a child stopped":           "echo $$ > shell.pid; sh -c 'echo $$ > child.pid; kill -STOP $$'; echo late",
	} {
		for _, hup := range []string{"SIGHUP default", "SIGHUP ignored"} {
			t.Run(name+", "+hup, func(t *testing.T) {
				t.Parallel()
				killedDriverLeavesNothing(t, command, hup == "SIGHUP ignored")
			})
		}
	}
}

// killedDriverLeavesNothing starts a driver running command, started
// under an ignored SIGHUP when ignoreHUP (as `nohup` does), kills it, and
// checks that every process of the command's group is gone.
func killedDriverLeavesNothing(t *testing.T, command string, ignoreHUP bool) {
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	driver := exec.Command(exe)
	if ignoreHUP { // the shell execs the driver: the disposition is inherited
		driver = exec.Command("/bin/sh", "-c", `trap '' HUP; exec "$0"`, exe)
	}
	driver.Env = append(os.Environ(), driverEnv+"="+command, driverDirEnv+"="+dir)
	if err := driver.Start(); err != nil {
		t.Fatal(err)
	}
	shell, child := readPid(t, filepath.Join(dir, "shell.pid")), readPid(t, filepath.Join(dir, "child.pid"))
	t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL); syscall.Kill(shell, syscall.SIGKILL) })
	pgid, err := syscall.Getpgid(shell)
	if err != nil {
		t.Fatal(err)
	}
	if ignoreHUP && !sigIgnored(t, driver.Process.Pid, syscall.SIGHUP) {
		t.Fatal("the driver does not ignore SIGHUP: the test does not test what it says")
	}
	if err := driver.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = driver.Wait()
	waitGone(t, shell)
	waitGone(t, child)
	waitGone(t, pgid) // the watchdog
	if left := groupMembers(pgid); len(left) > 0 {
		t.Fatalf("processes %v of the command's group %d are left", left, pgid)
	}
}

// sigIgnored reads from /proc whether process pid ignores sig.
func sigIgnored(t *testing.T, pid int, sig syscall.Signal) bool {
	t.Helper()
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return mask&(1<<(uint(sig)-1)) != 0
		}
	}
	t.Fatalf("no SigIgn in /proc/%d/status", pid)
	return false
}

// groupMembers lists the live processes (not zombies) of group pgid.
func groupMembers(pgid int) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, err := syscall.Getpgid(pid); err == nil && g == pgid && !gone(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
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
