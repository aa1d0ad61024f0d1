//go:build unix && !linux

package shellexec

import "syscall"

// waitExited returns at once where waitid(WNOWAIT) is not available: the
// group is then killed after the shell is reaped, which leaves a small window
// in which its group id could be reused.
func waitExited(int) {}

// killGroup sends SIGKILL to every process of the group pgid.
func killGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}
