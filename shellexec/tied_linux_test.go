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
// shell, a child it started, and the watchdog sees it all — so a resumed run's
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
	waitGone(t, pgid) // the group id: the shell, which leads the group
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

// TestSharedWatchdogKillsEveryGroup: the driving process has one watchdog
// for all its commands (design record 0051), not one per command: four
// commands at once, each in its own group with a child, are four groups
// and one watchdog among the driver's children; SIGKILL of the driver,
// under an ignored SIGHUP, kills all four groups and leaves nothing.
func TestSharedWatchdogKillsEveryGroup(t *testing.T) {
	t.Parallel()
	const n = 4
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	driver := exec.Command("/bin/sh", "-c", `trap '' HUP; exec "$0"`, exe)
	driver.Env = append(os.Environ(), driverEnv+"=echo 0 > child.$$; sleep 600 & echo $! > child.$$; wait",
		driverDirEnv+"="+dir, driverCountEnv+"="+strconv.Itoa(n))
	if err := driver.Start(); err != nil {
		t.Fatal(err)
	}
	var shells, children []int
	deadline := time.Now().Add(10 * time.Second)
	for len(shells) < n {
		if time.Now().After(deadline) {
			driver.Process.Kill()
			t.Fatalf("%d commands started, want %d", len(shells), n)
		}
		time.Sleep(10 * time.Millisecond)
		names, _ := filepath.Glob(filepath.Join(dir, "child.*"))
		shells, children = nil, nil
		for _, name := range names {
			b, _ := os.ReadFile(name)
			child, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || child == 0 {
				break
			}
			shell, _ := strconv.Atoi(strings.TrimPrefix(filepath.Ext(name), "."))
			shells, children = append(shells, shell), append(children, child)
		}
	}
	t.Cleanup(func() {
		for _, pid := range append(shells, children...) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	groups := map[int]bool{}
	for i, shell := range shells {
		pgid, err := syscall.Getpgid(shell)
		if err != nil || pgid != shell {
			t.Fatalf("the shell %d is in group %d (%v): want a group it leads", shell, pgid, err)
		}
		if cg, err := syscall.Getpgid(children[i]); err != nil || cg != pgid {
			t.Fatalf("the child %d is in group %d (%v), want %d", children[i], cg, err, pgid)
		}
		groups[pgid] = true
	}
	if len(groups) != n {
		t.Fatalf("%d groups for %d commands", len(groups), n)
	}
	var others []int // the driver's children that are not the commands' shells
	for _, pid := range childrenOf(driver.Process.Pid) {
		if !groups[pid] {
			others = append(others, pid)
		}
	}
	if len(others) != 1 {
		t.Fatalf("the driver has %d processes beside its %d commands (%v), want one watchdog", len(others), n, others)
	}
	watchdog := others[0]
	if !sigIgnored(t, driver.Process.Pid, syscall.SIGHUP) {
		t.Fatal("the driver does not ignore SIGHUP: the test does not test what it says")
	}
	if err := driver.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = driver.Wait()
	for pgid := range groups {
		waitGone(t, pgid)
	}
	for _, child := range children {
		waitGone(t, child)
	}
	waitGone(t, watchdog)
	for pgid := range groups {
		if left := groupMembers(pgid); len(left) > 0 {
			t.Fatalf("processes %v of the command's group %d are left", left, pgid)
		}
	}
}

// childrenOf lists the live children of process pid.
func childrenOf(pid int) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(stat), ')')
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) && !gone(child) {
			pids = append(pids, child)
		}
	}
	return pids
}

// TestGoAheadIsInvisible: the go-ahead a command waits for (its descriptor
// 3 and the line before its script) leaves no trace the command sees: the
// descriptor is closed and the script's line numbers are its own.
func TestGoAheadIsInvisible(t *testing.T) {
	t.Parallel()
	e := newExec(t, shellexec.Options{Shell: "sh"})
	out := execute(t, e, code("if [ -e /proc/$$/fd/3 ]; then echo open; else echo closed; fi\nnosuchcommand_xyz"))
	if want := "[exit code 127]\nclosed\nsh: 2: nosuchcommand_xyz: not found\n"; out.Observation != want {
		t.Fatalf("observation %q, want %q", out.Observation, want)
	}
}
