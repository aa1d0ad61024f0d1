package shellexec

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/polyloop/polyloop"
)

// Defaults used when an Options field is zero.
const (
	DefaultShell       = "bash"
	DefaultTimeout     = 60 * time.Second
	DefaultOutputLimit = 10_000
	// MaxOutputLimit is the largest OutputLimit: kept as the log keeps
	// text, its characters (at most four bytes each, three for each byte
	// that is not UTF-8) stay well within polyloop.MaxObservationBytes.
	MaxOutputLimit = polyloop.MaxObservationBytes / 16
	// DefaultPath is the PATH commands see unless EnvAllow or Env give one.
	DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	// DefaultLang is the LANG commands see unless EnvAllow or Env give one.
	DefaultLang = "C.UTF-8"
	// ToolName is the name of the shell tool in ToolSpecs.
	ToolName = "bash"
)

// drainTimeout bounds how long Execute waits for the output stream after the
// process group is gone (it stays open only if a process escaped the group);
// cancelDrainTimeout is the same bound when ctx ended the command, which must
// return promptly.
const (
	drainTimeout       = 2 * time.Second
	cancelDrainTimeout = 100 * time.Millisecond
)

// Options configure an Executor.
type Options struct {
	// Dir is the working directory, the persistent state of the environment.
	// Required. It is made absolute by New; it need not exist yet, but an
	// action that runs while it is unusable is an EnvError.
	Dir string
	// Timeout bounds each action; a command still running then is killed
	// and reported as Executed with "timed out". Zero means DefaultTimeout.
	Timeout time.Duration
	// OutputLimit is the number of characters (runes) of output kept in the
	// observation, at most MaxOutputLimit. Zero means DefaultOutputLimit.
	OutputLimit int
	// EnvAllow names host environment variables passed through to commands
	// (when set on the host). Nothing else from the host is visible.
	EnvAllow []string
	// Env gives explicit variables, which override the defaults and EnvAllow.
	Env map[string]string
	// DoneSentinel, when not empty, is the output line that signals the
	// environment's completion (Done).
	DoneSentinel string
	// Shell is the shell program run as Shell -c COMMAND; a name without a
	// slash is looked up in the host's PATH at each action. Zero means
	// DefaultShell.
	Shell string
	// ToolReplay is the replay policy of the bash tool. Zero means
	// polyloop.NeverReplay (polyloop.RestoreAndReplay with InEnvironment).
	// Code actions are never replayed, whatever this says.
	ToolReplay polyloop.ReplayPolicy
	// Reconcile, when set, is a shell command that answers, on resume, for
	// a shell action (the bash tool or a code action) of unknown outcome:
	// run like an action (the working directory, the environment, the
	// timeout) with POLYLOOP_IDEMPOTENCY_KEY, POLYLOOP_RUN_ID,
	// POLYLOOP_ACTION_ID and POLYLOOP_ACTION (the action as JSON) set, it
	// prints one JSON verdict on stdout (polyloop.VerdictJSON) and exits 0.
	// A command that cannot run, exits non-zero or prints anything else is
	// an error of the reconciler, which propagates out of Resume.
	Reconcile string
	// InEnvironment runs every command inside the run's environment
	// (polyloop.EnvironmentFromContext, Agent.Environment) through
	// Environment.Exec, never on the host: Dir is then the working
	// directory inside it (empty: the environment's), Shell defaults to
	// "sh", EnvAllow must be empty (the environment's spec names the host
	// variables it lets in) and Env is added to each command's. An action
	// of a run without an environment is an env_error. The timeout is
	// enforced by the environment's backend.
	InEnvironment bool
}

// Executor runs shell commands. It is safe for concurrent use; concurrent
// actions share the working directory.
type Executor struct {
	opts Options
	env  []string
}

// New checks the options, fills in defaults and computes the commands'
// environment.
func New(opts Options) (*Executor, error) {
	if opts.InEnvironment {
		return newInEnvironment(opts)
	}
	if opts.Dir == "" {
		return nil, errors.New("shellexec: Options.Dir is required")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("shellexec: working directory: %w", err)
	}
	opts.Dir = dir
	return finish(opts)
}

// finish checks the options common to both modes and fills in defaults.
func finish(opts Options) (*Executor, error) {
	if opts.Timeout < 0 || opts.OutputLimit < 0 {
		return nil, errors.New("shellexec: Timeout and OutputLimit must not be negative")
	}
	if opts.OutputLimit > MaxOutputLimit {
		return nil, fmt.Errorf("shellexec: OutputLimit %d is above MaxOutputLimit (%d characters)", opts.OutputLimit, MaxOutputLimit)
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.OutputLimit == 0 {
		opts.OutputLimit = DefaultOutputLimit
	}
	if opts.Shell == "" {
		opts.Shell = DefaultShell
	}
	switch opts.ToolReplay {
	case "":
		opts.ToolReplay = polyloop.NeverReplay
		if opts.InEnvironment {
			opts.ToolReplay = polyloop.RestoreAndReplay
		}
	case polyloop.ReplaySafe, polyloop.NeverReplay, polyloop.ReplayIdempotent:
	case polyloop.RestoreAndReplay:
		if !opts.InEnvironment {
			return nil, errors.New("shellexec: replay policy restore_and_replay needs InEnvironment")
		}
	default:
		return nil, fmt.Errorf("shellexec: unknown replay policy %q", string(opts.ToolReplay))
	}
	if opts.InEnvironment {
		return &Executor{opts: opts}, nil
	}
	return &Executor{opts: opts, env: environ(opts, os.LookupEnv)}, nil
}

// newInEnvironment checks the options of an executor whose commands run in
// the run's environment.
func newInEnvironment(opts Options) (*Executor, error) {
	if opts.Dir != "" && !path.IsAbs(opts.Dir) {
		return nil, fmt.Errorf("shellexec: working directory %q inside the environment is not absolute", opts.Dir)
	}
	if len(opts.EnvAllow) > 0 {
		return nil, errors.New("shellexec: EnvAllow lets host variables in; in an environment its spec names them (EnvSpec.HostEnv)")
	}
	if opts.Shell == "" {
		opts.Shell = "sh"
	}
	return finish(opts)
}
