//go:build linux

package bwrapenv

import (
	"time"
)

// The driver and the init inside the sandbox speak gob over the init's
// standard input (requests) and output (responses). The first request is
// the setup; the init answers it with a response of ID 0 once it serves.

// initMarker, as the first argument of the driver's own executable run as
// the sandbox's init, makes package bwrapenv's init function serve instead
// of returning to main.
const initMarker = "polyloop-bwrapenv-init-v1"

// setup is what the init needs before it can serve: where bwrap put the
// layers, and the host variables the environment was allowed (their values
// travel here, not on a command line another process could read).
type setup struct {
	Mounts  []mountPoint
	HostEnv []string // NAME=value
	// DefaultEnv is the image's default environment (PATH at least).
	DefaultEnv []string
	WorkDir    string
}

// mountPoint is a host path bwrap bound read-only at Staging, to be bound
// at Target inside the environment's root.
type mountPoint struct {
	Staging, Target string
}

const (
	opSetup   = "setup"
	opExec    = "exec"
	opCancel  = "cancel"
	opCopyIn  = "copy_in"
	opCopyOut = "copy_out"
)

type request struct {
	ID     uint64
	Op     string
	Setup  *setup
	Exec   *execRequest
	Target uint64 // cancel: the exec to kill
	Path   string // copy_in: directory; copy_out: path
	Data   []byte // copy_in: the tar stream
}

type execRequest struct {
	Argv        []string
	Dir         string
	Env         []string
	Stdin       []byte
	Timeout     time.Duration
	OutputLimit int
}

type response struct {
	ID       uint64
	Exec     *execResult
	Data     []byte // copy_out: the tar stream
	Err      string
	NotExist bool // the path does not exist
	Invalid  bool // the request is malformed
}

type execResult struct {
	ExitCode      int
	Stdout        []byte
	Stderr        []byte
	StdoutDropped int64
	StderrDropped int64
	TimedOut      bool
}
