//go:build linux

package sbinit

import (
	"time"
)

// The driver and the init inside the sandbox speak gob over the init's
// standard input (requests) and output (responses). The first request is
// the setup; the init answers it with a response of ID 0 once it serves.

// Marker, as the first argument of the driver's own executable run as
// the sandbox's init, makes package bwrapenv's init function serve instead
// of returning to main.
const Marker = "polyloop-bwrapenv-init-v1"

// setup is what the init needs before it can serve: where bwrap put the
// layers. Nothing in it belongs to a run: a sandbox started for the
// provider's pool (no run yet) is set up like one started for a run. The
// host variables the environment was allowed and its working directory
// travel with each exec (their values on the pipe, never on a command line
// another process could read).
type Setup struct {
	Mounts []MountPoint
	// DefaultEnv is the image's default environment (PATH at least).
	DefaultEnv []string
}

// MountPoint is a host path bwrap bound read-only at Staging, to be bound
// at Target inside the environment's root.
type MountPoint struct {
	Staging, Target string
}

const (
	OpSetup   = "setup"
	OpExec    = "exec"
	OpCancel  = "cancel"
	OpCopyIn  = "copy_in"
	OpCopyOut = "copy_out"
)

type Request struct {
	ID     uint64
	Op     string
	Setup  *Setup
	Exec   *ExecRequest
	Target uint64 // cancel: the exec to kill
	Path   string // copy_in: directory; copy_out: path
	Data   []byte // copy_in: the tar stream
}

type ExecRequest struct {
	Argv []string
	Dir  string // never empty: the driver fills in the spec's WorkDir, or "/"
	// Env: the host variables the spec allowed, then the request's (later
	// ones win), over the image's defaults (polyloop.CommandEnv).
	Env         []string
	Stdin       []byte
	Timeout     time.Duration
	OutputLimit int
}

type Response struct {
	ID       uint64
	Exec     *ExecResult
	Data     []byte // copy_out: the tar stream
	Err      string
	NotExist bool // the path does not exist
	Invalid  bool // the request is malformed
}

type ExecResult struct {
	ExitCode      int
	Stdout        []byte
	Stderr        []byte
	StdoutDropped int64
	StderrDropped int64
	TimedOut      bool
}
