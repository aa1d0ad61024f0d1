package procgroup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// modeEnv makes the test binary a driver (see TestMain); dirEnv names its
// directory.
const (
	modeEnv = "PROCGROUP_TEST_MODE"
	dirEnv  = "PROCGROUP_TEST_DIR"
)

func TestMain(m *testing.M) {
	dir := os.Getenv(dirEnv)
	switch os.Getenv(modeEnv) {
	case "":
		os.Exit(m.Run())
	case "die-before-tie": // starts a command and stops before its group is tied, until killed
		beforeTie = func(pgid int) {
			_ = os.WriteFile(filepath.Join(dir, "shell.pid"), []byte(strconv.Itoa(pgid)), 0o600)
			time.Sleep(time.Hour)
		}
		cmd := exec.Command("/bin/sh", "-c", "touch ran; sleep 600")
		cmd.Dir = dir
		_, err := StartTiedShell(cmd)
		fmt.Fprintln(os.Stderr, "the command started:", err)
		os.Exit(1)
	case "watchdog-killed": // starts a command, kills its watchdog, waits for the next one, until killed
		cmd := exec.Command("/bin/sh", "-c", "echo $$ > shell.pid; exec sleep 600")
		cmd.Dir = dir
		if _, err := StartTied(cmd); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		first := WatchdogPID()
		_ = syscall.Kill(first, syscall.SIGKILL)
		for WatchdogPID() == first || WatchdogPID() == 0 {
			time.Sleep(time.Millisecond)
		}
		_ = os.WriteFile(filepath.Join(dir, "watchdog.pid"), []byte(strconv.Itoa(WatchdogPID())), 0o600)
		time.Sleep(time.Hour)
	}
	os.Exit(2)
}

// driver starts the test binary in mode, under an ignored SIGHUP (as nohup
// does), in a fresh directory.
func driver(t *testing.T, mode string) (*exec.Cmd, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	d := exec.Command("/bin/sh", "-c", `trap '' HUP; exec "$0"`, exe)
	d.Env = append(os.Environ(), modeEnv+"="+mode, dirEnv+"="+dir)
	d.Stderr = os.Stderr
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Process.Kill(); _ = d.Wait() })
	return d, dir
}

// TestDriverDiesBeforeTheTie: a driver killed after starting a command
// but before the watchdog knows its group leaves nothing running, and the
// command never ran: it waits for a go-ahead that never comes.
func TestDriverDiesBeforeTheTie(t *testing.T) {
	t.Parallel()
	d, dir := driver(t, "die-before-tie")
	shell := readPID(t, filepath.Join(dir, "shell.pid"))
	t.Cleanup(func() { _ = syscall.Kill(-shell, syscall.SIGKILL) })
	if err := d.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = d.Wait()
	waitGone(t, shell)
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Fatal("the command ran without its go-ahead")
	}
}

// TestKilledWatchdogIsReplaced: a watchdog killed from outside is replaced
// and told of the live groups, so that the driver's death still kills
// them.
func TestKilledWatchdogIsReplaced(t *testing.T) {
	t.Parallel()
	d, dir := driver(t, "watchdog-killed")
	watchdog := readPID(t, filepath.Join(dir, "watchdog.pid"))
	shell := readPID(t, filepath.Join(dir, "shell.pid"))
	t.Cleanup(func() { _ = syscall.Kill(-shell, syscall.SIGKILL) })
	if err := d.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = d.Wait()
	waitGone(t, shell)
	waitGone(t, watchdog)
}

// TestWatchdogKillsOnlyLiveGroups: at end of file the watchdog script kills
// the groups it was told of and not told were over — a group id told over
// may name someone else's group by then.
func TestWatchdogKillsOnlyLiveGroups(t *testing.T) {
	t.Parallel()
	var groups [3]*exec.Cmd
	for i := range groups {
		groups[i] = exec.Command("sleep", "600")
		groups[i].SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := groups[i].Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = groups[i].Process.Kill(); _ = groups[i].Wait() })
	}
	a, b, c := groups[0].Process.Pid, groups[1].Process.Pid, groups[2].Process.Pid
	wd := exec.Command("/bin/sh", "-c", watchdogScript)
	wd.Stdin = strings.NewReader(fmt.Sprintf("+ %d\n+ %d\n+ %d\n- %d\n", a, b, c, b))
	if err := wd.Run(); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 2} {
		err := groups[i].Wait()
		if err == nil || !strings.Contains(err.Error(), "killed") {
			t.Errorf("group %d (%d of a, b, c) not killed: %v", groups[i].Process.Pid, i, err)
		}
	}
	if err := syscall.Kill(b, 0); err != nil {
		t.Errorf("group %d (b, told over) was killed: %v", b, err)
	}
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && pid > 0 {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitGone waits for process pid to be gone (or a zombie).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
			return
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("process %d is still running", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStoppedWatchdogIsReplaced: a watchdog stopped (SIGSTOP, which any
// process of the user may send it) stops reading its lifeline; once the
// pipe is full, the driver's next message does not wait for it forever:
// the stopped watchdog is killed and a new one, told of every live group,
// takes its place. (Before, the ~8,000th message blocked the driver: every
// new action, and every Wait and Signal behind it.)
func TestStoppedWatchdogIsReplaced(t *testing.T) {
	cmd := exec.Command("/bin/sh", "-c", "exec sleep 600")
	g, err := StartTied(cmd)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { g.Signal(syscall.SIGKILL); _ = g.Wait() }()
	old := WatchdogPID()
	if err := syscall.Kill(old, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Ids above pid_max (at most 2^22) name no group: were they killed,
		// nothing would be.
		for i := range 20000 {
			pgid := 1<<30 + i
			if err := tie(pgid); err != nil {
				t.Errorf("tie %d: %v", pgid, err)
				return
			}
			untie(pgid)
		}
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = syscall.Kill(old, syscall.SIGCONT) // let the test end
		<-done
		t.Fatal("the driver was blocked on a stopped watchdog's full lifeline")
	}
	if now := WatchdogPID(); now == old || now == 0 {
		t.Fatalf("watchdog %d, was %d: not replaced", now, old)
	}
	waitGone(t, old)
	// The new watchdog guards the live group: it was told of it.
	watchdog.mu.Lock()
	live := watchdog.live[g.Pgid]
	watchdog.mu.Unlock()
	if !live {
		t.Fatal("the live group is no longer tied")
	}
}
