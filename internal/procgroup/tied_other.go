//go:build !linux

package procgroup

import "os/exec"

// Group is the process group of a command started by StartTied.
type Group struct {
	// Pgid is the group's id: the command's pid.
	Pgid int
}

// StartTied starts cmd as the leader of a new process group (Attr). The
// group is tied to this process's life on Linux only; here a command
// outlives a process that is killed.
func StartTied(cmd *exec.Cmd) (*Group, error) {
	cmd.SysProcAttr = Attr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &Group{Pgid: cmd.Process.Pid}, nil
}

// Close does nothing here.
func (g *Group) Close() {}
