//go:build !linux

package procgroup

// WaitExited reports false at once: waiting without reaping (waitid with
// WNOWAIT) is Linux's. The caller reaps the process, then ends what is left
// of its group.
func WaitExited(int) bool { return false }
