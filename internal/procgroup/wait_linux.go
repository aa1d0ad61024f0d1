package procgroup

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// WaitExited blocks until the process pid has exited, without reaping it,
// and reports true: while it is an unreaped zombie its pid, and so its
// process group id, cannot be reused, which makes signalling the group
// afterwards safe.
func WaitExited(pid int) bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, syscall.EINTR) {
			return true
		}
	}
}
