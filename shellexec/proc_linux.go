package shellexec

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// waitExited blocks until the process pid has exited, without reaping it:
// while it is an unreaped zombie its pid, and so its process group id, cannot
// be reused, which makes killing the group afterwards safe.
func waitExited(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, syscall.EINTR) {
			return
		}
	}
}

// killGroup sends SIGKILL to every process of the group pgid. A group that
// is already empty is not an error.
func killGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}
