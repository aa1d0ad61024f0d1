//go:build unix

package procgroup

import (
	"os"
	"syscall"
)

// Attr is the SysProcAttr of a command started as the leader of a new
// process group, whose id is then its pid.
func Attr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// Signal sends sig to every process of the group that p leads. A group
// already empty is not an error.
func Signal(p *os.Process, sig syscall.Signal) {
	_ = syscall.Kill(-p.Pid, sig)
}

// KillGroup sends SIGKILL to every process of the group pgid. A group
// already empty is not an error.
func KillGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}
