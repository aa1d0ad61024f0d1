//go:build !linux

package procgroup

// WaitExited reports false at once: waiting without reaping (waitid with
// WNOWAIT) is Linux's here. The caller reaps the process, then signals what
// is left of its group, with the small window in which the group id could
// be reused that this leaves.
func WaitExited(int) bool { return false }
