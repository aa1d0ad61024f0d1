//go:build unix

package procgroup

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// goAhead is what a command started by StartTied or StartTiedShell runs
// before anything else: it waits for a line on descriptor 3 (the go-ahead,
// written once its group is known to the watchdog), exits without running
// anything when this process died before writing it (end of file), and
// closes the descriptor. It is one line, so that the command's own line
// numbers are unchanged.
const goAhead = "read -r _ <&3 || exit 125; exec 3<&-; "

// beforeTie, when set (by tests), is called between the command's start
// and its group's tie.
var beforeTie func(pgid int)

// Group is the process group of a command started by StartTied or
// StartTiedShell: the command leads it.
type Group struct {
	// Pgid is the group's id: the command's pid.
	Pgid int
	cmd  *exec.Cmd

	mu     sync.Mutex
	reaped bool // the leader is (being) reaped: Pgid may name another group
}

// StartTied starts cmd (any program) as the leader of a new process group
// tied to the life of this process: if this process dies, however it dies
// (SIGKILL too), the command and what it started in its group are killed
// by the process's watchdog (see the package documentation). The program
// is started through /bin/sh, which waits for its go-ahead and then
// executes it in its place (same pid; argv[0] becomes cmd.Path).
// cmd.SysProcAttr is replaced; cmd.ExtraFiles must be empty. Call Wait
// once the command is started.
func StartTied(cmd *exec.Cmd) (*Group, error) {
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	args := append([]string{"/bin/sh", "-c", goAhead + `exec "$0" "$@"`, cmd.Path}, cmd.Args[1:]...)
	cmd.Path, cmd.Args = "/bin/sh", args
	return start(cmd)
}

// StartTiedShell is StartTied for a command that is itself a POSIX shell
// script, cmd.Args being [SHELL, "-c", SCRIPT, ...]: the shell waits for
// its go-ahead before running the script, and no other program is started.
func StartTiedShell(cmd *exec.Cmd) (*Group, error) {
	if len(cmd.Args) < 3 || cmd.Args[1] != "-c" {
		return nil, fmt.Errorf("procgroup: StartTiedShell needs SHELL -c SCRIPT, got %q", cmd.Args)
	}
	cmd.Args = append([]string(nil), cmd.Args...)
	cmd.Args[2] = goAhead + cmd.Args[2]
	return start(cmd)
}

// start starts cmd, which waits for the go-ahead on descriptor 3, in a new
// group, makes the watchdog know the group, then gives the go-ahead. If
// this process dies before the watchdog knows the group, the command reads
// end of file and exits without running anything; after, the watchdog
// kills the group.
func start(cmd *exec.Cmd) (*Group, error) {
	if len(cmd.ExtraFiles) > 0 {
		return nil, errors.New("procgroup: the command has extra files: descriptor 3 is the go-ahead")
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating the process group's go-ahead: %w", err)
	}
	cmd.ExtraFiles = []*os.File{r}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close()
	cmd.ExtraFiles = nil
	if err != nil {
		w.Close()
		return nil, err
	}
	g := &Group{Pgid: cmd.Process.Pid, cmd: cmd}
	if beforeTie != nil {
		beforeTie(g.Pgid)
	}
	if err := tie(g.Pgid); err != nil {
		w.Close() // the command reads end of file and exits, having run nothing
		g.Signal(syscall.SIGKILL)
		_ = g.Wait()
		return nil, err
	}
	// An error here means the command is gone already (a script its shell
	// could not parse): Wait reports how it ended.
	_, _ = w.Write([]byte{'\n'})
	w.Close()
	return g, nil
}

// Signal sends sig to every process of the group. Once Wait has seen the
// leader exit and killed the group, it does nothing (the group id may be
// reused). It is safe for concurrent use with Wait.
func (g *Group) Signal(sig syscall.Signal) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.reaped {
		_ = syscall.Kill(-g.Pgid, sig)
	}
}

// Wait waits for the command to exit, kills whatever it left in its group,
// tells the watchdog the group is over, and reaps the command; it returns
// cmd.Wait's error. Where the exit can be awaited without reaping (Linux),
// all of this happens while the unreaped leader still holds the group id,
// so no other group can be hit; elsewhere the leftovers are killed just
// after the reap. Call it once.
func (g *Group) Wait() error {
	if !WaitExited(g.Pgid) {
		err := g.cmd.Wait()
		g.end()
		return err
	}
	g.end()
	return g.cmd.Wait()
}

// end kills the group, forgets it, and stops Signal.
func (g *Group) end() {
	g.mu.Lock()
	defer g.mu.Unlock()
	_ = syscall.Kill(-g.Pgid, syscall.SIGKILL)
	untie(g.Pgid)
	g.reaped = true
}
