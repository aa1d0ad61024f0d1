//go:build unix

package procgroup

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// watchdogScript ignores the signals a group may be sent as a whole (a
// command's `kill 0`, Close's SIGTERM, a hang-up), waits until its stdin,
// the lifeline, reaches end of file, and then kills its whole group, itself
// included.
const watchdogScript = "trap '' HUP INT QUIT TERM; read -r line; kill -KILL 0"

// Group is the process group of a command started by StartTied.
type Group struct {
	// Pgid is the group's id: the watchdog's pid.
	Pgid     int
	watchdog *exec.Cmd
	lifeline *os.File // the pipe's write end: only this process holds it

	mu     sync.Mutex
	closed bool // the watchdog is reaped: Pgid may name another group
}

// StartTied starts cmd in a new process group tied to the life of this
// process: if this process dies, however it dies (SIGKILL too), the
// command and what it started in its group are killed. Close the Group
// once cmd has been waited for.
//
// Nothing of a process that is killed runs, so the group is led by a
// watchdog, a /bin/sh started before the command, whose stdin is the read
// end of a pipe (the lifeline) whose write end only this process holds
// (close-on-exec: no child inherits it). When this process dies the kernel
// closes the write end, the watchdog reads end of file and sends SIGKILL to
// its group. This depends neither on the signal dispositions this process
// inherited (a SIGHUP ignored under nohup, tmux scripts or CI runners) nor
// on who adopts its children (init or a subreaper): only on the kernel
// closing a dead process's files. The watchdog ignores SIGHUP, SIGINT,
// SIGQUIT and SIGTERM, which a command may send to its own group; only
// SIGKILL ends it early.
//
// What escapes: a process that leaves the group (setsid). The watchdog,
// unreaped until Close, holds the group id, so signalling the group is
// always safe. cmd.SysProcAttr is replaced.
func StartTied(cmd *exec.Cmd) (*Group, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating the process group's lifeline: %w", err)
	}
	wd := exec.Command("/bin/sh", "-c", watchdogScript)
	wd.Dir, wd.Env, wd.Stdin = "/", []string{}, r
	wd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = wd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("starting the process group's watchdog: %w", err)
	}
	g := &Group{Pgid: wd.Process.Pid, watchdog: wd, lifeline: w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: g.Pgid}
	if err := cmd.Start(); err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// Signal sends sig to every process of the group; the watchdog ignores
// all but SIGKILL. After Close it does nothing. It is safe for concurrent
// use with Close.
func (g *Group) Signal(sig syscall.Signal) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		_ = syscall.Kill(-g.Pgid, sig)
	}
}

// Close kills every process of the group, the watchdog too, reaps the
// watchdog and closes the lifeline. It is idempotent.
func (g *Group) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return
	}
	g.closed = true
	_ = syscall.Kill(-g.Pgid, syscall.SIGKILL)
	_ = g.watchdog.Wait()
	_ = g.lifeline.Close()
}
