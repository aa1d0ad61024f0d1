//go:build linux && !cgo

package procguard

// droppedAtLoad: without cgo there is no constructor; Guard drops
// CAP_SYS_PTRACE on every thread (syscall.AllThreadsSyscall).
const droppedAtLoad = false
