package polyloop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"
)

// EnvProvider is the sixth seam: it creates, for one run, an isolated
// environment from an image — a container, or a namespace sandbox over a
// root filesystem — in which the run's actions execute (SPEC §13).
//
// Contract:
//   - Create makes a new environment for spec.RunID from spec.Image (a name
//     or a "sha256:" digest), with spec's limits, network policy, files,
//     host variables and read-only mounts, or — when spec.From is set —
//     with the filesystem of that snapshot instead of the bare image, which
//     it then pins under spec.RunID (BlobStore.Pin: a fork holds the
//     snapshot it starts from, whatever becomes of its source). The
//     environment is labelled with the run id (a container label, a state
//     file) so that EnvPruner can find it once its driver is gone.
//   - Nothing of the host is visible inside an environment but what spec
//     names: no variable of the driving process (its /proc/PID/environ
//     included: no process of the host is visible at all), no file, no
//     network unless spec.Network is NetworkOpen. A backend that cannot
//     enforce what spec asks (limits without cgroups, a network policy it
//     does not know) MUST fail Create with ErrEnvUnsupported, never create
//     an environment that is less confined than its description says.
//   - Failures: an image that does not exist is ErrImageNotFound; a
//     spec.From the provider's BlobStore does not hold (or holds for
//     another image) is ErrEnvSnapshotNotFound; bad input (no run id, a
//     relative path) is ErrEnvInvalid; every other failure (the daemon
//     cannot be reached, the sandbox does not start) wraps ErrEnvFailed.
//     All of them but ErrEnvInvalid and cancellation mean "the environment
//     cannot be created": the executor's env_error. A failed Create leaves
//     nothing behind.
//   - Describe resolves spec without creating anything: the description
//     (image digest included) that Create's environment will report. It
//     fails as Create does.
//   - Cancellation: with ctx done, Create and Describe return promptly an
//     error that errors.Is ctx.Err(), leaving nothing behind.
//   - Ownership: spec (its slices) belongs to the caller; the provider
//     copies what it keeps. The environment returned belongs to the caller,
//     who MUST Destroy it.
//   - Environments started ahead (a pool): a provider MAY start
//     environments before any Create asks for them and hand one to Create,
//     provided it is indistinguishable from one Create would start for
//     spec: started from the bare image, never given to another run (an
//     environment serves one Create, then is destroyed), no file nor
//     process but the image's and spec's, the host variables' values read
//     at Create. An environment kept ahead is labelled as the provider's,
//     so that EnvPruner removes it once its driver is gone; the provider
//     says how it bounds them (see EnvBounder) and how they are drained.
//   - Concurrency: a provider is safe for concurrent use; environments of
//     different runs never share files, processes or a network.
type EnvProvider interface {
	Create(ctx context.Context, spec EnvSpec) (Environment, error)
	Describe(ctx context.Context, spec EnvSpec) (EnvDescription, error)
}

// Environment is one run's isolated environment (see EnvProvider).
//
// Contract, per operation:
//   - Exec runs req.Argv inside the environment and waits for it. A
//     command that ran is a result, whatever its exit: a non-zero ExitCode,
//     a command that does not exist or cannot be executed (ExitCode 127 or
//     126, with the reason on Stderr), a command killed by req.Timeout
//     (TimedOut, ExitCode -1) are all results with a nil error — the
//     executor's "executed". The timeout is enforced by the backend itself:
//     the command and its process group are killed when it passes, even if
//     the caller is gone. Output beyond req.OutputLimit is dropped and
//     counted. The command's environment variables are the image's
//     defaults (PATH at least), then the host variables spec.HostEnv
//     allowed, then req.Env; nothing else.
//   - CopyIn extracts a tar stream under dir (created if missing), as the
//     environment's root user; CopyOut writes a tar stream of path (a file,
//     or a directory and everything under it) to w. CopyOut of a path that
//     does not exist fails with an error that errors.Is fs.ErrNotExist:
//     that is an answer, not a failure of the environment.
//   - Snapshot makes the environment's filesystem durable in the provider's
//     BlobStore and returns its reference; it pins the snapshot under the
//     environment's run id (BlobStore.Pin), so that no sweep removes it
//     while the run refers to it. It holds the filesystem only — every
//     file, directory and symbolic link with its content, mode, owner and
//     modification time, and what was deleted from the image — and none of
//     the processes, the host paths mounted in (spec.Mounts), /proc, /sys
//     or /dev. It is taken with no Exec running (the caller's obligation;
//     a snapshot taken during one holds the files at some moment of it).
//     When Snapshot returns, the snapshot survives the driving process:
//     it is durable, valid after a crash, and restorable on any host whose
//     provider reads the same BlobStore (or a copy of the snapshot's blobs).
//   - Restore replaces the environment's filesystem with a snapshot's: the
//     image with the snapshot's changes, nothing else. Every process
//     running in the environment is ended first; a restored environment
//     runs none. A reference the store does not hold, or one taken from
//     another image, is ErrEnvSnapshotNotFound, and the environment is
//     left as it was.
//   - Destroy ends every process and removes the environment and its
//     label; its snapshots stay in the BlobStore (they belong to the log).
//     It is idempotent; after it, every other call fails with ErrEnvLost.
//     A provider MAY finish the removal in the background: Destroy then
//     returns once the environment serves no more and its processes are
//     being ended, and the provider says how its caller waits for the rest
//     (a Close); a driver that dies first leaves a labelled environment
//     that EnvPruner removes.
//   - Failures: ErrEnvInvalid for a malformed request (empty Argv, a
//     relative path): nothing ran and the environment is unchanged.
//     Everything else — the sandbox died, the container was removed
//     (ErrEnvLost), the daemon is unreachable, a snapshot could not be
//     written or read — wraps ErrEnvFailed, inside an *EnvOpError naming the
//     operation: the environment cannot keep serving, which the executor
//     maps to env_error. Use EnvCannotServe to tell.
//   - Cancellation: when ctx is done, a call returns promptly with an error
//     that errors.Is ctx.Err(); an Exec cut short kills its command first.
//     The environment stays usable (if the backend could not end the
//     command, later calls fail with ErrEnvFailed).
//   - Killing the driver: when the process that created the environment
//     dies, every command running in it is killed by the backend (not by
//     the dead process); the filesystem stays, found by EnvPruner.
//   - Ownership: requests belong to the caller and are not retained;
//     results and their slices belong to the caller.
//   - Concurrency: every method is safe for concurrent use; a backend MAY
//     run concurrent Execs one after the other. Restore and Destroy MUST
//     NOT be called while another call on the environment is in flight.
type Environment interface {
	// Description is what the environment is: the value for the run's
	// parameter snapshot. It does not change over the environment's life.
	Description() EnvDescription
	Exec(ctx context.Context, req ExecRequest) (ExecResult, error)
	CopyIn(ctx context.Context, dir string, tarStream io.Reader) error
	CopyOut(ctx context.Context, path string, w io.Writer) error
	Snapshot(ctx context.Context) (EnvSnapshot, error)
	Restore(ctx context.Context, snap EnvSnapshot) error
	Destroy(ctx context.Context) error
}

// EnvPruner is optional on an EnvProvider: it finds the environments whose
// driving process is gone (killed, crashed, on this host or — where the
// backend can tell — elsewhere) by the run id and driver they carry, and
// removes them (unless dryRun). Environments of live drivers are never
// touched. It returns what it found. Prune is the explicit prune: it
// removes the environments marked kept (EnvKeeper) too, reporting them
// with Kept set.
type EnvPruner interface {
	Prune(ctx context.Context, dryRun bool) ([]EnvOrphan, error)
}

// EnvKeeper is optional on an Environment: Keep marks it kept — left for a
// person to look at once its driver is gone (polyloop sweep
// --keep-environments) — durably, in the environment's own state, so that
// an automatic prune (EnvKeptSparer) leaves it; only an explicit Prune
// (polyloop env prune) removes it.
type EnvKeeper interface {
	Keep(ctx context.Context) error
}

// EnvKeptSparer is optional on an EnvPruner: PruneSparingKept is Prune
// that leaves the orphans marked kept (EnvKeeper), reporting them with Kept
// set and Removed unset. The automatic prune at a sweep's start uses it.
type EnvKeptSparer interface {
	PruneSparingKept(ctx context.Context, dryRun bool) ([]EnvOrphan, error)
}

// EnvBounder is optional on an EnvProvider that keeps environments its
// callers do not hold: started ahead of a Create (a pool), or still being
// removed after Destroy returned (a destroy in the background).
// BoundEnvironments(n) makes the provider keep at most n environments in
// existence at once, those included: a Create that would exceed it waits
// (until ctx is done) for a destroy to finish, or uses or evicts one held
// ahead. A sweep calls it with its max_environments, so that the bound
// counts what exists, not only what its runs hold. n ≤ 0 is ignored; the
// lowest bound asked holds.
type EnvBounder interface {
	BoundEnvironments(n int)
}

// EnvOrphan is an environment whose driver is gone.
type EnvOrphan struct {
	Backend string `json:"backend"`
	// ID is the backend's name for it (a container id, a sandbox
	// directory).
	ID    string `json:"id"`
	RunID string `json:"run_id"`
	// Driver says which process created it ("pid 123 on host").
	Driver string `json:"driver"`
	// Removed is set when Prune removed it.
	Removed bool `json:"removed"`
	// Kept is set for an environment marked kept (EnvKeeper).
	Kept bool `json:"kept,omitempty"`
}

// EnvSpec is what an environment is created from.
type EnvSpec struct {
	// RunID is the run that owns the environment (required).
	RunID string
	// Image is a backend's image name, or a "sha256:" digest.
	Image string
	// Limits bound what the environment's processes may use; zero fields
	// are unlimited.
	Limits EnvLimits
	// Network is the network policy; the zero value is NetworkNone.
	Network NetworkPolicy
	// Files are copied in at creation (absolute paths inside).
	Files []EnvFile
	// HostEnv names the variables of the driving process that every Exec
	// sees (their values are read at Create; they are not in the
	// description, only their names).
	HostEnv []string
	// Mounts are host paths visible read-only inside.
	Mounts []EnvMount
	// WorkDir is the working directory of an Exec that names none ("/"
	// when empty). Create makes it (and its missing parents, as the
	// environment's root user, mode 0755) when the image does not hold it,
	// as Docker does; an environment From a snapshot has the snapshot's.
	WorkDir string
	// From, when set, creates the environment with that snapshot's
	// filesystem (a resumed or forked run).
	From EnvSnapshot
}

// EnvLimits bound an environment's resources; a zero field is no limit.
type EnvLimits struct {
	// CPUs is the CPU time per wall second, in cores (0.5: half a core).
	CPUs float64 `json:"cpus,omitempty"`
	// MemoryBytes bounds the memory of all its processes together.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// PIDs bounds how many processes and threads exist at once.
	PIDs int64 `json:"pids,omitempty"`
}

// NetworkPolicy says what an environment's processes may reach.
type NetworkPolicy string

const (
	// NetworkNone: no network but the environment's own loopback (the
	// default; the zero value means it too).
	NetworkNone NetworkPolicy = "none"
	// NetworkOpen: the backend's ordinary outside access (Docker's default
	// bridge network; the sandbox backend shares the host's network
	// namespace). Effects of such an environment may leave it.
	NetworkOpen NetworkPolicy = "open"
)

// Normalize returns the policy with the zero value read as NetworkNone.
func (p NetworkPolicy) Normalize() NetworkPolicy {
	if p == "" {
		return NetworkNone
	}
	return p
}

// EnvFile is a file copied into an environment at creation.
type EnvFile struct {
	Path    string
	Mode    fs.FileMode // permission bits; 0644 when zero
	Content []byte
}

// EnvMount is a host path made visible read-only inside an environment.
type EnvMount struct {
	Source string `json:"source"` // absolute host path
	Target string `json:"target"` // absolute path inside
}

// ExecRequest is one command to run in an environment.
type ExecRequest struct {
	// Argv is the command and its arguments (Argv[0] looked up in PATH
	// when it has no slash).
	Argv []string
	// Dir is the working directory (the spec's WorkDir when empty).
	Dir string
	// Env are "NAME=value" variables added to the command's environment.
	Env []string
	// Stdin is the command's standard input (empty: end of file at once).
	Stdin []byte
	// Timeout, when positive, is how long the command may run before the
	// backend kills it.
	Timeout time.Duration
	// OutputLimit bounds the bytes kept of stdout and of stderr, each
	// (DefaultExecOutputLimit when zero).
	OutputLimit int
}

// DefaultExecOutputLimit is the output kept per stream when a request sets
// no OutputLimit.
const DefaultExecOutputLimit = 1 << 20

// ExecResult is what a command did.
type ExecResult struct {
	// ExitCode is the command's exit status; -1 when it was killed by a
	// signal (by the timeout, say).
	ExitCode int
	Stdout   []byte
	Stderr   []byte
	// StdoutDropped and StderrDropped count the bytes beyond OutputLimit.
	StdoutDropped int64
	StderrDropped int64
	// TimedOut says the backend killed the command at its Timeout.
	TimedOut bool
}

// EnvSnapshot is a durable reference to an environment's filesystem state
// (Environment.Snapshot). It is opaque — today "sha256:" and the hex
// digest of the snapshot's manifest blob in the BlobStore — and keeps its
// meaning after the driving process dies and on another host reading the
// same blobs. The empty value means "no snapshot".
type EnvSnapshot string

// Short is the reference cut for people: "sha256:" and 12 hex digits,
// followed by "…" when something was cut.
func (r EnvSnapshot) Short() string {
	if n := len("sha256:") + 12; len(r) > n {
		return string(r[:n]) + "…"
	}
	return string(r)
}

// Errors of the environment seam. Test for them with errors.Is.
var (
	// ErrEnvFailed marks every failure after which the environment cannot
	// keep serving (or could not be created): the executor's env_error.
	ErrEnvFailed = errors.New("polyloop: environment failed")
	// ErrEnvLost: the environment is gone (destroyed, its sandbox died,
	// its container was removed). It wraps ErrEnvFailed.
	ErrEnvLost = fmt.Errorf("%w: the environment is gone", ErrEnvFailed)
	// ErrImageNotFound: the image does not exist. It wraps ErrEnvFailed.
	ErrImageNotFound = fmt.Errorf("%w: image not found", ErrEnvFailed)
	// ErrEnvSnapshotNotFound: the BlobStore does not hold the snapshot (or
	// it was taken from another image). It wraps ErrEnvFailed: a lost
	// environment is never silently recreated empty.
	ErrEnvSnapshotNotFound = fmt.Errorf("%w: environment snapshot not found", ErrEnvFailed)
	// ErrEnvUnsupported: the spec asks for confinement the backend cannot
	// enforce here (limits without cgroups, say). It wraps ErrEnvFailed.
	ErrEnvUnsupported = fmt.Errorf("%w: not supported by this backend here", ErrEnvFailed)
	// ErrEnvInvalid: a malformed spec or request; nothing was done. It does
	// not wrap ErrEnvFailed.
	ErrEnvInvalid = errors.New("polyloop: invalid environment request")
)

// EnvCannotServe reports whether err means that the environment cannot
// keep serving (or could not be created): the executor's env_error. A
// cancellation, a malformed request and a missing path (fs.ErrNotExist
// from CopyOut) are not.
func EnvCannotServe(err error) bool {
	return err != nil && errors.Is(err, ErrEnvFailed) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// EnvOpError is how a backend reports a failure: the operation, the backend,
// the run, and the backend's own error. errors.Is reaches both Kind (one
// of the sentinels above) and Err.
type EnvOpError struct {
	// Op is "create", "exec", "copy_in", "copy_out", "snapshot",
	// "restore", "destroy" or "prune".
	Op      string
	Backend string
	RunID   string
	Kind    error
	Err     error
}

func (e *EnvOpError) Error() string {
	msg := fmt.Sprintf("polyloop: %s environment", e.Backend)
	if e.RunID != "" { // empty: a description, before any run
		msg += fmt.Sprintf(" of run %q", e.RunID)
	}
	msg += ": " + e.Op
	// The kind, unless the backend's error says it already.
	if e.Kind != nil && e.Kind != ErrEnvFailed && (e.Err == nil || !errors.Is(e.Err, e.Kind)) {
		msg += ": " + trimPrefix(e.Kind.Error())
	}
	if e.Err != nil {
		msg += ": " + trimPrefix(e.Err.Error())
	}
	return msg
}

// Unwrap returns the kind and the backend's error.
func (e *EnvOpError) Unwrap() []error {
	var out []error
	if e.Kind != nil {
		out = append(out, e.Kind)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

func trimPrefix(s string) string {
	const p = "polyloop: environment failed: "
	if len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}
