package procgroup

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// WaitExited blocks until the process pid has exited, without reaping it,
// and reports true: the caller can then end what the process left behind
// (its group) before it reaps it and waits for its output to close.
func WaitExited(pid int) bool {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, syscall.EINTR) {
			return true
		}
	}
}
