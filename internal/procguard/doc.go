// Package procguard keeps the secrets of the process that drives runs —
// the API keys in its environment, a password in its command line — out of
// reach of the processes it starts: shell actions and stdio MCP servers,
// which a prompt-injected model commands, and which would otherwise read
// them through /proc/$PPID (environ, cmdline, mem) and write them into an
// observation.
//
// On Linux, Guard, called first in main, makes sure that:
//
//   - its environment as the kernel shows it (/proc/PID/environ, the block
//     given to execve) holds only an allow-list of harmless variables
//     (the others' entries are overwritten with NULs), while os.Getenv
//     sees them all;
//   - its command line as the kernel shows it (/proc/PID/cmdline, readable
//     by every local user) has its passwords masked by the caller's
//     redact; os.Args is the real one;
//   - CAP_SYS_PTRACE is dropped from the capability bounding set (and from
//     the inheritable and ambient sets) of every thread, so that nothing
//     it starts has it: a root child could otherwise read its memory;
//   - it is made non-dumpable (PR_SET_DUMPABLE 0): /proc/PID/mem, environ
//     and the rest need CAP_SYS_PTRACE of a process of the same user.
//
// It does this in place: Go's copies of the environment and arguments are
// moved off the block execve wrote, the block is rewritten through
// /proc/self/mem, and CAP_SYS_PTRACE leaves every thread — in a program
// linked with cgo by a C constructor that runs before the Go runtime
// starts a second thread, otherwise by syscall.AllThreadsSyscall. Where the
// rewrite fails, it re-executes the program once, with the same pid, the
// hidden variables handed to the new image through a memory file
// descriptor, from a thread without CAP_SYS_PTRACE. Run as root without
// CAP_SETPCAP, CAP_SYS_PTRACE cannot leave the bounding set: Guard then
// returns an error saying so (the CLI prints it as a warning).
//
// What stays within reach, and why an environment (a sandbox, a container)
// is the answer to it, is in docs/design/0037-hostile-input.md: the memory
// of other processes of the same user (the shell that started polyloop,
// if it holds a key), files the user can read, and for root the
// capabilities other than CAP_SYS_PTRACE (CAP_SYS_ADMIN and CAP_PERFMON
// let root read any environ, which is why the environ block is emptied of
// secrets; CAP_SYS_MODULE, BPF and raw devices reach any memory).
//
// Elsewhere Guard does nothing.
package procguard
