//go:build linux

package procguard

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// fdEnv names the descriptor of the hidden environment and arguments in
// the re-executed image.
const fdEnv = "POLYLOOP_GUARD_FD"

// payload is what the first image hands the second through the
// descriptor.
type payload struct {
	Env  []string `json:"env"`
	Args []string `json:"args"`
}

// Guard keeps this process's secrets from the processes it starts (see
// the package documentation). redact masks the secrets of one command-line
// argument, for the copy of the command line the kernel shows. On the
// first call it re-executes the program and does not return; in the
// re-executed image it restores the environment and os.Args. When the
// re-execution cannot be done (no /proc/self/exe), the process goes on as
// it is, non-dumpable, and the error says what could not be done.
func Guard(redact func(arg string) string) error {
	if fd := os.Getenv(fdEnv); fd != "" {
		err := restore(fd)
		return joinErr(err, harden())
	}
	err := reexec(redact)
	return joinErr(err, harden())
}

// harden makes this process non-dumpable.
func harden() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("procguard: PR_SET_DUMPABLE: %w", err)
	}
	return nil
}

// reexec executes the program again, same pid, with the kernel-visible
// environment and arguments stripped of secrets and without
// CAP_SYS_PTRACE. It returns only on failure.
func reexec(redact func(string) string) error {
	runtime.LockOSThread() // the capability sets are per thread: the exec carries this one's
	defer runtime.UnlockOSThread()
	dropPtrace()
	visible, hidden := split(os.Environ())
	data, err := json.Marshal(payload{Env: hidden, Args: os.Args})
	if err != nil {
		return err
	}
	fd, err := unix.MemfdCreate("polyloop-guard", 0) // no MFD_CLOEXEC: the new image reads it
	if err != nil {
		return fmt.Errorf("procguard: memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "polyloop-guard")
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("procguard: %w", err)
	}
	argv := make([]string, len(os.Args))
	for i, a := range os.Args {
		argv[i] = a
		if i > 0 {
			argv[i] = redact(a)
		}
	}
	env := append(visible, fdEnv+"="+strconv.Itoa(fd))
	return fmt.Errorf("procguard: re-executing /proc/self/exe: %w", unix.Exec("/proc/self/exe", argv, env))
}

// dropPtrace takes CAP_SYS_PTRACE out of this thread's bounding,
// inheritable and ambient sets, where it can (dropping from the bounding
// set needs CAP_SETPCAP: an ordinary user has nothing to drop).
func dropPtrace() {
	_ = unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_PTRACE, 0, 0, 0)
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_LOWER, unix.CAP_SYS_PTRACE, 0, 0)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if unix.Capget(&hdr, &data[0]) == nil {
		data[unix.CAP_SYS_PTRACE/32].Inheritable &^= 1 << (unix.CAP_SYS_PTRACE % 32)
		_ = unix.Capset(&hdr, &data[0])
	}
}

// restore reads the payload from descriptor fd, closes it, and sets the
// hidden variables and os.Args again.
func restore(fdText string) error {
	os.Unsetenv(fdEnv)
	fd, err := strconv.Atoi(fdText)
	if err != nil {
		return fmt.Errorf("procguard: %s=%q", fdEnv, fdText)
	}
	f := os.NewFile(uintptr(fd), "polyloop-guard")
	defer f.Close()
	if _, err := f.Seek(0, 0); err != nil {
		return fmt.Errorf("procguard: %w", err)
	}
	var p payload
	if err := json.NewDecoder(f).Decode(&p); err != nil {
		return fmt.Errorf("procguard: reading the hidden environment: %w", err)
	}
	for _, kv := range p.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			os.Setenv(k, v)
		}
	}
	if len(p.Args) > 0 {
		os.Args = p.Args
	}
	return nil
}
