//go:build linux

package procguard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

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
// argument, for the copy of the command line the kernel shows.
//
// It first does it in place (scrub): CAP_SYS_PTRACE is dropped on every
// thread (in a program linked with cgo, by a C constructor before the
// first thread is started: load_cgo.go), and the environment and arguments
// the kernel shows — the bytes at the top of the stack that execve wrote —
// are overwritten, after Go's environment and os.Args have been copied
// away from them. Where that cannot be done (/proc/self/mem not writable),
// it re-executes the program and does not return; in the re-executed image it restores the environment and
// os.Args. When neither can be done (no /proc/self/exe), the process goes
// on as it is, non-dumpable, and the error says what could not be done.
func Guard(redact func(arg string) string) error {
	if fd := os.Getenv(fdEnv); fd != "" {
		err := restore(fd)
		return joinErr(err, harden())
	}
	if scrub(redact) == nil {
		return harden()
	}
	err := reexec(redact)
	return joinErr(err, harden())
}

// reexecForced makes Guard re-execute without trying scrub (tests).
var reexecForced = os.Getenv("POLYLOOP_GUARD_REEXEC") == "1"

// scrub does in this image what reexec does with a new one (see Guard).
func scrub(redact func(string) string) error {
	if reexecForced {
		return errors.New("procguard: re-execution forced")
	}
	if !droppedAtLoad {
		if err := dropPtraceEverywhere(); err != nil {
			return err
		}
	}
	argStart, argEnd, envStart, envEnd, err := blocks()
	if err != nil {
		return err
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("procguard: %w", err)
	}
	defer mem.Close()
	args := make([]byte, argEnd-argStart)
	env := make([]byte, envEnd-envStart)
	if _, err := mem.ReadAt(args, argStart); err != nil {
		return fmt.Errorf("procguard: reading the arguments: %w", err)
	}
	if _, err := mem.ReadAt(env, envStart); err != nil {
		return fmt.Errorf("procguard: reading the environment: %w", err)
	}
	// Go's strings of the environment and of os.Args point into those
	// bytes: copy them away first.
	environ := os.Environ()
	os.Clearenv()
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			os.Setenv(strings.Clone(k), strings.Clone(v))
		}
	}
	osArgs := make([]string, len(os.Args))
	for i, a := range os.Args {
		osArgs[i] = strings.Clone(a)
	}
	os.Args = osArgs
	// The hidden variables become NULs (empty entries); the arguments
	// their redacted selves, cut or padded with NULs to their length.
	for off := 0; off < len(env); {
		n := bytes.IndexByte(env[off:], 0)
		if n < 0 {
			n = len(env) - off
		}
		if _, hidden := split([]string{string(env[off : off+n])}); len(hidden) > 0 {
			clear(env[off : off+n])
		}
		off += n + 1
	}
	for i, off := 0, 0; off < len(args); i++ {
		n := bytes.IndexByte(args[off:], 0)
		if n < 0 {
			n = len(args) - off
		}
		if a := string(args[off : off+n]); i > 0 {
			if r := redact(a); r != a {
				clear(args[off : off+n])
				copy(args[off:off+n], r)
			}
		}
		off += n + 1
	}
	if _, err := mem.WriteAt(env, envStart); err != nil {
		return fmt.Errorf("procguard: hiding the environment: %w", err)
	}
	if _, err := mem.WriteAt(args, argStart); err != nil {
		return fmt.Errorf("procguard: hiding the arguments: %w", err)
	}
	return nil
}

// blocks reads from /proc/self/stat where the kernel-visible arguments and
// environment are (fields 48 to 51).
func blocks() (argStart, argEnd, envStart, envEnd int64, err error) {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, 0, 0, fmt.Errorf("procguard: %w", err)
	}
	i := bytes.LastIndexByte(stat, ')')
	fields := strings.Fields(string(stat[i+1:])) // fields[0] is field 3, the state
	if len(fields) < 50 {
		return 0, 0, 0, 0, errors.New("procguard: /proc/self/stat has no argument and environment bounds")
	}
	var v [4]int64
	for j := range v {
		if v[j], err = strconv.ParseInt(fields[45+j], 10, 64); err != nil {
			return 0, 0, 0, 0, fmt.Errorf("procguard: /proc/self/stat: %w", err)
		}
	}
	if v[0] <= 0 || v[1] < v[0] || v[2] < v[1] || v[3] < v[2] {
		return 0, 0, 0, 0, fmt.Errorf("procguard: /proc/self/stat bounds %v", v)
	}
	return v[0], v[1], v[2], v[3], nil
}

// dropPtraceEverywhere is dropPtrace on every thread of the process
// (syscall.AllThreadsSyscall), so that whichever thread starts a child
// gives it no CAP_SYS_PTRACE; the permitted and effective sets lose it
// too, as a re-executed image would. It fails in a program linked with
// cgo.
func dropPtraceEverywhere() error {
	if _, _, e := syscall.AllThreadsSyscall(syscall.SYS_PRCTL, unix.PR_CAPBSET_DROP, unix.CAP_SYS_PTRACE, 0); e == syscall.ENOTSUP {
		return errors.New("procguard: cannot reach every thread (cgo)")
	} // EPERM (no CAP_SETPCAP: an ordinary user, nothing to drop) is fine, as in dropPtrace
	_, _, _ = syscall.AllThreadsSyscall6(syscall.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_LOWER, unix.CAP_SYS_PTRACE, 0, 0, 0)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if unix.Capget(&hdr, &data[0]) == nil {
		bit := uint32(1) << (unix.CAP_SYS_PTRACE % 32)
		d := &data[unix.CAP_SYS_PTRACE/32]
		d.Inheritable, d.Permitted, d.Effective = d.Inheritable&^bit, d.Permitted&^bit, d.Effective&^bit
		_, _, _ = syscall.AllThreadsSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
	}
	return nil
}

// harden makes this process non-dumpable.
func harden() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("procguard: PR_SET_DUMPABLE: %w", err)
	}
	if os.Geteuid() == 0 && ptraceBounded() {
		return errors.New("procguard: CAP_SYS_PTRACE could not leave the bounding set (the process lacks CAP_SETPCAP): " +
			"a command run as root can read this process's memory, keys included; drop CAP_SYS_PTRACE from the service's or container's capabilities")
	}
	return nil
}

// ptraceBounded reports whether CAP_SYS_PTRACE is still in this thread's
// bounding set, which a child executed as root would get back (unknown
// counts as still there).
func ptraceBounded() bool {
	status, err := os.ReadFile("/proc/thread-self/status")
	return err != nil || ptraceInBounding(status)
}

// ptraceInBounding reads a /proc status file's CapBnd line: whether it
// holds CAP_SYS_PTRACE (a missing or unreadable line counts as holding it).
func ptraceInBounding(status []byte) bool {
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			bnd, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err != nil || bnd&(1<<unix.CAP_SYS_PTRACE) != 0
		}
	}
	return true
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
