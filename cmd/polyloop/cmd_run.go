package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/dsn"
	traj "github.com/polyloop/polyloop/internal/trajectory"
	"github.com/spf13/cobra"
)

type runFlags struct {
	sinkFlags
	id   string
	json bool
}

func newRunCmd(a *app) *cobra.Command {
	var f runFlags
	c := &cobra.Command{
		Use:   "run AGENT.yaml TASK",
		Short: "Run an agent on a task",
		Long: `Run an agent file on a task. TASK is the task's text, @FILE to read it from a
file, or - to read it from standard input.

The agent file (YAML; every key in docs/agent-file.md) is checked before
anything runs: every problem is reported at once, each with file, line and
column. API keys come from the environment only.

Progress (step, action, status, tokens, cost) goes to standard error; with
--json the result goes to standard output as JSON.

The first Ctrl-C (SIGINT or SIGTERM) stops the run at the next step boundary:
the action in progress finishes and is recorded, so nothing is of unknown
outcome. A second one cancels at once: what was under way has no recorded
outcome, and resume decides by its replay policy. Either way nothing is
invented in the log, and the command says what resume will do.

While the run is going, it holds the run's lease: another polyloop resuming
the same run is refused, naming this process.

--view ADDR serves polyloop view (the same read-only pages) from this process
while it runs, and the run's page shows the model's text as it streams, before
the reply is recorded — what no other process can see, since streamed text is
never written to the log. A retried attempt's text is replaced, never glued on.

Tracing: with OTEL_EXPORTER_OTLP_ENDPOINT set (e.g. http://localhost:4318, a
Jaeger or OpenTelemetry Collector speaking OTLP/HTTP), the run's spans are
exported as OpenTelemetry traces, one trace per run across its resumes
(OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES and OTEL_EXPORTER_OTLP_HEADERS
apply). Traces are flushed before the command exits, even when standard
output is closed (| head).

` + exitCodesHelp,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.run(cmd.Context(), args[0], args[1], f)
		},
	}
	c.Flags().StringVar(&f.id, "id", "", "the run id (default: a new ULID)")
	c.Flags().BoolVar(&f.json, "json", false, "print the result as JSON on standard output")
	c.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "no progress lines")
	c.Flags().StringVar(&f.events, "events", "", "append the run's events to this file as JSON lines")
	c.Flags().StringVar(&f.view, "view", "", viewFlagHelp)
	return c
}

// readTask reads the TASK argument: text, @FILE or - (stdin), at most
// polyloop.MaxInputFileBytes (the snapshot that holds it is one record).
func (a *app) readTask(ctx context.Context, arg string) (string, error) {
	switch {
	case arg == "-":
		return readInput(ctx, a.stdin, "-", "the task", polyloop.MaxInputFileBytes)
	case strings.HasPrefix(arg, "@"):
		return readInput(ctx, a.stdin, arg[1:], "the task", polyloop.MaxInputFileBytes)
	}
	return arg, nil
}

func (a *app) run(parent context.Context, agentPath, taskArg string, f runFlags) error {
	input, err := a.readTask(parent, taskArg)
	if err != nil {
		return err
	}
	if strings.TrimSpace(input) == "" {
		return errors.New("the task is empty: give its text, @FILE or - for standard input")
	}
	in := newInterruption(parent, a.stderr)
	defer in.close()
	ctx := in.ctx
	cfg, err := a.loadAgent(ctx, agentPath, f.quiet)
	if err != nil {
		return a.loadFailed(agentPath, err, in.wasCanceled())
	}
	defer cfg.Close()
	if l := cfg.File.Limits; l.MaxSteps == 0 && l.TimeLimit == "" && l.WorkingLimit == "" {
		fmt.Fprintf(a.stderr, "warning: %s sets no limits.max_steps: only the model, or a token or cost limit, ends the run\n", agentPath)
	}
	st, err := openStore(ctx, a.store, createStore)
	if err != nil {
		return err
	}
	defer st.Close()
	sinks, err := a.eventSinks(ctx, f.sinkFlags)
	if err != nil {
		return err
	}
	defer sinks.close()
	id := f.id
	if id == "" {
		id = polyloop.NewRunID()
	}
	live, err := a.startLiveView(f.view, st, id)
	if err != nil {
		return err
	}
	defer live.close()
	in.begin()
	res, err := cfg.Runner(st, live.sinks(sinks.sinks)...).Run(ctx, id, cfg.Agent, polyloop.Task{Input: input})
	sinks.ended(id, err)
	if err != nil {
		return a.runFailed(st, id, agentPath, err, in)
	}
	return a.report(res, agentPath, f.json)
}

// runFailed turns a Run or Resume error into the command's outcome. An
// interruption leaves the run resumable, and says what resume will do; a
// run held by another process names it.
func (a *app) runFailed(st polyloop.Store, id, agentPath string, err error, in *interruption) error {
	if e := a.interrupted(st, id, a.resumeCommand(id, agentPath), err, in); e != nil {
		return e
	}
	if e := a.leaseRefused(id, agentPath, err); e != nil {
		return e
	}
	switch {
	case errors.Is(err, polyloop.ErrRunExists):
		fmt.Fprintf(a.stderr, "run %s already exists; to continue it:\n  %s\n", id, a.resumeCommand(id, agentPath))
	case !errors.Is(err, polyloop.ErrInvalidConfig) && !errors.Is(err, polyloop.ErrSnapshotMismatch):
		fmt.Fprintf(a.stderr, "run %s is unfinished: polyloop show %s%s shows where it stopped\n", id, id, a.storeFlag())
	}
	return fmt.Errorf("run %s: %w", id, err)
}

// storeFlag repeats --store for a printed command, when not the default.
func (a *app) storeFlag() string {
	if a.store == defaultStore {
		return ""
	}
	return " --store " + dsn.Redact(a.store)
}

// report prints a finished run's result and gives its exit code.
// report prints a run's result; agentPath is the agent file to resume it
// with.
func (a *app) report(res polyloop.RunResult, agentPath string, asJSON bool) error {
	if asJSON {
		if err := writeJSON(a.machineOut(), res); err != nil {
			return err
		}
	} else if res.Suspended != nil {
		return a.reportSuspended(res, agentPath)
	} else {
		fmt.Fprintf(a.stdout, "run %s: %s after %s\n", res.RunID, res.StopReason, traj.StepsPhrase(res.Totals))
		if res.FinalAnswer != "" {
			fmt.Fprintf(a.stdout, "answer: %s\n", res.FinalAnswer)
		}
	}
	for _, s := range res.Sinks {
		fmt.Fprintf(a.stderr, "warning: event sink %d (%s): %d errors, %d panics, %d timeouts, disabled=%v\n",
			s.Index, s.Sink, s.Errors, s.Panics, s.Timeouts, s.Disabled)
	}
	return resultExit(res)
}

// resultExit is the exit of a command that ran a run (run, resume, fork,
// replay), as exitCodesHelp says: nil (0) for a completed run, exit 3 for
// a suspended one, 1 for any other stop.
func resultExit(res polyloop.RunResult) error {
	switch {
	case res.Suspended != nil:
		return &exitErr{code: exitSuspended}
	case res.StopReason != polyloop.StopCompleted:
		return &exitErr{code: exitStopped}
	}
	return nil
}
