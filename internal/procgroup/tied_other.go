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

// Signal kills the command: there are no other signals here.
func (g *Group) Signal(syscall.Signal) { _ = g.cmd.Process.Kill() }

// Close does nothing here.
func (g *Group) Close() {}
