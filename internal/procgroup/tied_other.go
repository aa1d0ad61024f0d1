//go:build !unix

package procgroup

import (
	"os/exec"
	"syscall"
)

// Group is the process of a command started by StartTied: there are no
// process groups here.
type Group struct {
	// Pgid is the command's pid.
	Pgid int
	cmd  *exec.Cmd
}

// StartTied starts cmd. Here a command outlives a process that is killed.
func StartTied(cmd *exec.Cmd) (*Group, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &Group{Pgid: cmd.Process.Pid, cmd: cmd}, nil
}

// StartTiedShell is StartTied.
func StartTiedShell(cmd *exec.Cmd) (*Group, error) { return StartTied(cmd) }

// Signal kills the command: there are no other signals here.
func (g *Group) Signal(syscall.Signal) { _ = g.cmd.Process.Kill() }

// Wait waits for the command.
func (g *Group) Wait() error { return g.cmd.Wait() }

// WatchdogPID is 0: there is no watchdog here.
func WatchdogPID() int { return 0 }
