package procgroup

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// cldStopped is si_code CLD_STOPPED: the child was stopped by a signal.
const cldStopped = 5

// sentinelScript stops its shell, and stops it again whenever it is
// continued: a member of the group that is always stopped.
const sentinelScript = "while :; do kill -STOP $$; done"

// Group is the process group of a command started by StartTied.
type Group struct {
	// Pgid is the group's id: the sentinel's pid.
	Pgid     int
	sentinel *exec.Cmd
}

// StartTied starts cmd in a new process group tied to the life of this
// process: if this process dies, however it dies (SIGKILL too), the
// command and what it started in its group are ended by the kernel. Close
// the Group once cmd has been waited for.
//
// Two kernel rules do it, because nothing of a process that is killed
// runs:
//   - the command gets Pdeathsig SIGKILL: the kernel kills it when the
//     thread that forked it ends. The fork is done by one goroutine locked
//     to its OS thread for the life of the process, so that thread ends only
//     with the process (a goroutine that exits while locked ends its
//     thread, which would kill every child that thread forked:
//     go.dev/issue/27505).
//   - Pdeathsig reaches the command only, not its children, so the group
//     is led by a sentinel, a /bin/sh that keeps itself stopped, started
//     before the command. When this process dies, the group is orphaned
//     (no member has a parent outside it in the same session), and the
//     kernel sends SIGHUP, then SIGCONT, to every process of an orphaned
//     group that has a stopped member (POSIX, for the stopped jobs of a
//     shell that dies).
//
// What escapes: a process that leaves the group (setsid), or that ignores
// SIGHUP and is not the command itself (nohup); and the SIGHUP rule when
// this process's children are adopted by a subreaper in this session and
// another group rather than by init (PR_SET_CHILD_SUBREAPER), which leaves
// the group not orphaned. The sentinel, unreaped until Close, holds the
// group id, so signalling the group is always safe. cmd.SysProcAttr is
// replaced.
func StartTied(cmd *exec.Cmd) (*Group, error) {
	s, err := startSentinel()
	if err != nil {
		return nil, err
	}
	g := &Group{Pgid: s.Process.Pid, sentinel: s}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: g.Pgid, Pdeathsig: syscall.SIGKILL}
	if err := onSpawner(cmd.Start); err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// Close kills every process of the group, the sentinel too, and reaps the
// sentinel.
func (g *Group) Close() {
	KillGroup(g.Pgid)
	_ = g.sentinel.Wait()
}

// startSentinel starts the sentinel as the leader of a new group and waits
// until it is stopped.
func startSentinel() (*exec.Cmd, error) {
	s := exec.Command("/bin/sh", "-c", sentinelScript)
	s.Dir, s.Env = "/", []string{}
	s.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.Start(); err != nil {
		return nil, fmt.Errorf("starting the process group's sentinel: %w", err)
	}
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, s.Process.Pid, &info, unix.WSTOPPED|unix.WEXITED|unix.WNOWAIT, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err == nil && info.Code == cldStopped {
			return s, nil
		}
		_ = s.Process.Kill()
		_ = s.Wait()
		return nil, fmt.Errorf("the process group's sentinel (/bin/sh) did not stop (waitid: %v, code %d)", err, info.Code)
	}
}

// spawner runs functions on one goroutine locked to its OS thread for the
// life of the process, so that the children it forks keep a parent thread
// that never ends before the process.
var spawner struct {
	once sync.Once
	jobs chan func()
}

func onSpawner(f func() error) error {
	spawner.once.Do(func() {
		spawner.jobs = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for job := range spawner.jobs {
				job()
			}
		}()
	})
	done := make(chan error, 1)
	spawner.jobs <- func() { done <- f() }
	return <-done
}
