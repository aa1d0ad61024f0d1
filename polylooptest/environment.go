package polylooptest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// EnvHarness tells TestEnvProvider how to drive a polyloop.EnvProvider.
// New and Image are required.
type EnvHarness struct {
	// New returns a provider whose snapshots go to fresh storage. It is
	// called once or more per subtest, from a goroutine other than the
	// test's.
	New func(t testing.TB) polyloop.EnvProvider
	// Reopen returns another provider reading the same snapshot storage as
	// p, as a driving process started later (or on another host) would.
	// Nil: CreateFrom uses p itself.
	Reopen func(t testing.TB, p polyloop.EnvProvider) polyloop.EnvProvider
	// Image names an image with a POSIX shell and the busybox (or
	// coreutils) tools: sh, cat, echo, sleep, kill, setsid, ls, rm, mkdir,
	// chmod, touch, stat, head, wc, env, and an /etc/passwd file; and no
	// /kit-workdir.
	Image string
	// Leftovers lists what exists of the environments of runID (containers,
	// sandbox directories, cgroups): nothing, after Destroy or a failed
	// Create. Nil: those parts of Destroy and ImageNotFound are skipped.
	Leftovers func(t testing.TB, p polyloop.EnvProvider, runID string) []string
	// Limits says the backend enforces EnvLimits on this host. False:
	// Limits is skipped.
	Limits bool
	// Skip names checks the implementation cannot honour, with the reason.
	Skip map[string]string
	// Timeout is the watchdog of each subtest (60 s when zero: a check
	// starts several environments).
	Timeout time.Duration
	// CancelWithin is how soon a call whose context is done must return
	// (DefaultCancelWithin when zero).
	CancelWithin time.Duration
}

func (h EnvHarness) settings() settings {
	if h.Timeout == 0 {
		h.Timeout = 60 * time.Second
	}
	return newSettings(h.Timeout, h.CancelWithin, h.Skip)
}

// The rules of the environment seam (polyloop.EnvProvider, Environment).
const (
	ruleEnvExec          rule = "Exec MUST run argv with its stdin, variables and directory, and return its stdout and stderr apart"
	ruleEnvExitIsResult  rule = "a command that ran, or could not be started, is a result with its exit code and a nil error"
	ruleEnvTimeout       rule = "the backend MUST kill a command at its timeout and return TimedOut"
	ruleEnvKillsCommand  rule = "an Exec cut short (timeout, cancellation) MUST NOT leave its command running"
	ruleEnvOutputLimit   rule = "output beyond OutputLimit MUST be dropped and counted"
	ruleEnvCopy          rule = "CopyIn and CopyOut MUST move files as tar streams; CopyOut of a missing path is fs.ErrNotExist, not a failure"
	ruleEnvFiles         rule = "the spec's files MUST be in the environment, and in its description by digest"
	ruleEnvDescription   rule = "the description MUST name the backend, the image's digest and the normalized policy, alike for alike specs"
	ruleEnvSnapshot      rule = "Restore MUST give back the snapshot's filesystem exactly: contents, modes, times, links, deletions"
	ruleEnvCreateFrom    rule = "an environment created From a snapshot MUST hold its filesystem, also from another provider on the same storage"
	ruleEnvNoProcesses   rule = "a restored environment MUST run no process of before"
	ruleEnvSnapMissing   rule = "a snapshot the store does not hold MUST be ErrEnvSnapshotNotFound, leaving the environment as it was"
	ruleEnvIsolated      rule = "nothing of the host MUST be visible inside: its variables, its files, its network, its processes"
	ruleEnvAllowed       rule = "the host variables and read-only mounts the spec names MUST be visible, the mounts read-only"
	ruleEnvDestroy       rule = "Destroy MUST remove the environment, be idempotent, and later calls fail with ErrEnvLost"
	ruleEnvImageNotFound rule = "Create from an image that does not exist MUST fail with ErrImageNotFound and leave nothing"
	ruleEnvInvalid       rule = "a malformed request MUST fail with ErrEnvInvalid, which is not a failure of the environment"
	ruleEnvLimits        rule = "the spec's memory and process limits MUST bound the environment"
	ruleEnvRunsIsolated  rule = "environments of different runs MUST NOT see each other's files"
	ruleEnvWorkDir       rule = "the spec's WorkDir MUST be the directory of an Exec that names none, made at Create when the image lacks it"
	ruleEnvFresh         rule = "an environment MUST hold nothing of one created before it (files, processes), only its image, its spec's files and the host variables' values at Create"
)

var envRules = []rule{ruleEnvExec, ruleEnvExitIsResult, ruleEnvTimeout, ruleEnvKillsCommand, ruleEnvOutputLimit,
	ruleEnvCopy, ruleEnvFiles, ruleEnvDescription, ruleEnvSnapshot, ruleEnvCreateFrom, ruleEnvNoProcesses,
	ruleEnvSnapMissing, ruleEnvIsolated, ruleEnvAllowed, ruleEnvDestroy, ruleEnvImageNotFound, ruleEnvInvalid,
	ruleEnvLimits, ruleEnvRunsIsolated, ruleEnvWorkDir, ruleEnvFresh}

// TestEnvProvider checks that the providers made by h, and their
// environments, honour the environment seam's contract. Run it with -race,
// not in parallel with other tests (Isolated sets a variable of the
// process to see that it does not leak in).
//
// The checks (subtest names, usable as keys of h.Skip):
//   - Exec: argv reaches the command verbatim (spaces, quotes, an empty
//     argument); stdin, variables and the working directory are honoured;
//     stdout and stderr come back apart.
//   - ExitIsResult: a non-zero exit, and a command that does not exist,
//     are results with a nil error and a non-zero exit code.
//   - Timeout: a command past its timeout is killed by the backend: the
//     call returns TimedOut soon after, and the process is gone.
//   - Cancelled: an Exec whose context is cancelled returns within
//     CancelWithin, with context.Canceled, its command gone; the
//     environment still serves.
//   - OutputLimit: output beyond OutputLimit is dropped and counted.
//   - Copy: a tar stream copied in is there; CopyOut gives it back;
//     CopyOut of a missing path is fs.ErrNotExist and not EnvCannotServe.
//   - Files: the spec's files are in the environment with their modes, and
//     in the description by digest.
//   - Description: the backend, the image's "sha256:" digest and network
//     "none" are described; Describe and two environments of one spec
//     describe alike.
//   - SnapshotRestore: after changes (contents, modes, times, symbolic
//     links, a file deleted from the image), Restore gives back each
//     snapshot exactly, the later one as well as the earlier.
//   - CreateFrom: an environment created From a snapshot, by a reopened
//     provider after the first environment is destroyed, holds its files.
//   - NoProcesses: a process started (in its own session) before a
//     restore does not run after it.
//   - SnapshotNotFound: Restore and Create From a reference the store does
//     not hold fail with ErrEnvSnapshotNotFound; the environment serves on,
//     unchanged.
//   - Isolated: a variable of the driving process is in no /proc/*/environ
//     and no command's environment; /proc/$PPID/environ cannot be read for
//     it; a host file is not there; a TCP listener of the host (on
//     loopback and on its other addresses) is not reached.
//   - Allowed: a host variable named in HostEnv and a read-only mount are
//     visible, and the mount cannot be written.
//   - Destroy: after Destroy, Exec fails with ErrEnvLost; Destroy again is
//     nil; nothing is left (Leftovers).
//   - ImageNotFound: Create from a missing image fails with
//     ErrImageNotFound and leaves nothing.
//   - Invalid: an empty argv and a relative directory fail with
//     ErrEnvInvalid, which EnvCannotServe does not count.
//   - Limits: with h.Limits, a memory limit stops a command that allocates
//     past it, and a pids limit bounds how many processes start.
//   - Concurrent: concurrent Execs on one environment each get their own
//     result; environments of two runs created at once do not see each
//     other's files.
//   - WorkDir: a spec's WorkDir the image does not hold
//     (/kit-workdir/sub) is made at Create: an Exec that names no
//     directory runs there and can write in it.
//   - Fresh: environments created one after another from one spec, after
//     one that wrote a file and left a process in its own session and was
//     destroyed, hold neither, and do hold their own spec's files and the
//     host variable's value at their Create (a provider that starts
//     environments ahead, a pool, must hand out only unused ones, and read
//     the run's values when one is taken).
func TestEnvProvider(t *testing.T, h EnvHarness) {
	t.Helper()
	if h.New == nil || h.Image == "" {
		t.Fatal("polylooptest: EnvHarness.New and Image are required")
	}
	runSuite(t, "EnvProvider", h, h.settings(), envChecks)
}

var envChecks = []check[EnvHarness]{
	{"Exec", ruled(ruleEnvExec, checkEnvExec)},
	{"ExitIsResult", ruled(ruleEnvExitIsResult, checkEnvExitIsResult)},
	{"Timeout", ruled(ruleEnvTimeout, checkEnvTimeout)},
	{"Cancelled", checkEnvCancelled},
	{"OutputLimit", ruled(ruleEnvOutputLimit, checkEnvOutputLimit)},
	{"Copy", ruled(ruleEnvCopy, checkEnvCopy)},
	{"Files", ruled(ruleEnvFiles, checkEnvFiles)},
	{"Description", ruled(ruleEnvDescription, checkEnvDescription)},
	{"SnapshotRestore", ruled(ruleEnvSnapshot, checkEnvSnapshotRestore)},
	{"CreateFrom", ruled(ruleEnvCreateFrom, checkEnvCreateFrom)},
	{"NoProcesses", ruled(ruleEnvNoProcesses, checkEnvNoProcesses)},
	{"SnapshotNotFound", ruled(ruleEnvSnapMissing, checkEnvSnapshotNotFound)},
	{"Isolated", ruled(ruleEnvIsolated, checkEnvIsolated)},
	{"Allowed", ruled(ruleEnvAllowed, checkEnvAllowed)},
	{"Destroy", ruled(ruleEnvDestroy, checkEnvDestroy)},
	{"ImageNotFound", ruled(ruleEnvImageNotFound, checkEnvImageNotFound)},
	{"Invalid", ruled(ruleEnvInvalid, checkEnvInvalid)},
	{"Limits", ruled(ruleEnvLimits, checkEnvLimits)},
	{"Concurrent", ruled(ruleConcurrentUse, checkEnvConcurrent)},
	{"WorkDir", ruled(ruleEnvWorkDir, checkEnvWorkDir)},
	{"Fresh", ruled(ruleEnvFresh, checkEnvFresh)},
}

// kitRun is a run id unique to one check.
func kitRun(e *env, name string) string {
	return fmt.Sprintf("kit-%s-%d", name, time.Now().UnixNano())
}

// create makes an environment and destroys it when the check ends.
func create(e *env, p polyloop.EnvProvider, spec polyloop.EnvSpec) (polyloop.Environment, error) {
	en, err := p.Create(e.ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("Create %s: %w", spec.RunID, err)
	}
	e.t.Cleanup(func() { en.Destroy(context.Background()) })
	return en, nil
}

// sh runs a shell script and fails unless it exits 0.
func sh(e *env, en polyloop.Environment, script string) (string, error) {
	r, err := en.Exec(e.ctx, polyloop.ExecRequest{Argv: []string{"sh", "-c", script}})
	if err != nil {
		return "", fmt.Errorf("exec %q: %w", script, err)
	}
	if r.ExitCode != 0 {
		return "", fmt.Errorf("exec %q: exit %d, stdout %q, stderr %q", script, r.ExitCode, r.Stdout, r.Stderr)
	}
	return string(r.Stdout), nil
}

// gone reports whether no process of the environment runs the kit's
// sleeper (its pid could name another process once a backend restarted
// the environment's process tree, so the kit asks the process table).
func gone(e *env, en polyloop.Environment) (bool, error) {
	r, err := en.Exec(e.ctx, polyloop.ExecRequest{Argv: []string{"sh", "-c", "ps -o args 2>/dev/null || ps"}})
	if err != nil {
		return false, err
	}
	return !strings.Contains(string(r.Stdout), sleeperArgs), nil
}

func isLost(err error) bool { return errors.Is(err, polyloop.ErrEnvLost) }

func trimmed(s string) string { return strings.TrimSpace(s) }
