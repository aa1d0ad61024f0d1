package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"syscall"

	"github.com/polyloop/polyloop"
	"github.com/spf13/cobra"
)

// app holds what every command shares: the standard streams and the global
// flags.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// rawOut and rawErr are the streams themselves, for the displays that
	// write their own terminal sequences and escape the outside text they
	// show (progress lines, previews, the sweep's bar); stdout and stderr
	// escape it all unless --raw (visible.go).
	rawOut, rawErr io.Writer
	// raw is --raw: outside text is written as it is.
	raw   bool
	store string
	// storeGiven is set when --store is on the command line.
	storeGiven bool
	// envs are the environment providers made for agent files with an
	// environment section, by backend (cmd_env.go).
	envMu sync.Mutex
	envs  map[string]polyloop.EnvProvider
	// envPool, set by sweep and worker before they load agent files, is
	// the sandbox backend's pool of started sandboxes (with destroys in
	// the background); 0 for commands of one run, where a pool would
	// start sandboxes no run takes.
	envPool int
}

const exitCodesHelp = `Exit codes:
  0    the run completed (or the command succeeded)
  1    the run stopped for another reason (max_steps, token_budget, cost_budget,
       time_limit, working_limit, llm_error, env_error, resume_state_unknown);
       verify: a corrupt log
  2    an error: bad agent file, unknown run, store failure, changed agent,
       a run held by another live process, ...
  3    the run is suspended: it waits for an approval or a delivery (polyloop
       approve, polyloop deliver), then polyloop resume goes on
  130  interrupted (Ctrl-C): stopped at a step boundary, or cancelled by a
       second Ctrl-C; nothing was invented; the command says what resume
       will do with the run, and how to resume it`

func newRoot(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "polyloop",
		Short: "Run LLM agent loops whose every run is a durable, resumable log",
		Long: `polyloop runs agents described by agent files (YAML) and keeps every run as an
append-only log, resumable step by step after a crash or Ctrl-C.

Start with "polyloop demo": offline, nothing to configure.

` + exitCodesHelp,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			a.storeGiven = cmd.Flags().Changed("store")
			a.escapeOutput()
		},
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	def := os.Getenv("POLYLOOP_STORE")
	if def == "" {
		def = defaultStore
	}
	root.PersistentFlags().StringVar(&a.store, "store", def,
		"where runs are stored: sqlite:PATH or a postgres:// DSN (default from $POLYLOOP_STORE)")
	root.PersistentFlags().BoolVar(&a.raw, "raw", false,
		"write outside text (replies, observations, answers, error messages) as it is, control characters included, instead of escaped")
	root.AddCommand(newDemoCmd(a), profiled(a, newRunCmd(a)), profiled(a, newResumeCmd(a)), newShowCmd(a), newLsCmd(a),
		newStatsCmd(a), newVerifyCmd(a), newExportCmd(a), newApproveCmd(a), newDeliverCmd(a),
		newForkCmd(a), newReplayCmd(a), newDiffCmd(a), newVersionCmd(a), newViewCmd(a), newMemoryCmd(a),
		profiled(a, newSweepCmd(a)), newScoreCmd(a), newSamplesCmd(a), profiled(a, newWorkerCmd(a)), newWorkersCmd(a), newEnvCmd(a))
	root.Version = polyloop.LibraryVersion // enables --version
	root.SetVersionTemplate(versionText(debug.ReadBuildInfo()))
	if c := newBenchCmd(a); c != nil {
		root.AddCommand(profiled(a, c))
	}
	return root
}

// interruptible returns a context cancelled by SIGINT or SIGTERM, and
// whether that happened.
func interruptible(parent context.Context) (context.Context, func() bool, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	interrupted := func() bool { return ctx.Err() != nil && parent.Err() == nil }
	return ctx, interrupted, stop
}
