package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/otelsink"
	"github.com/polyloop/polyloop/slogsink"
)

// sinkFlags are the event flags of run and resume.
type sinkFlags struct {
	quiet  bool
	events string
	// view is the address of the live view (--view), "" for none.
	view string
}

// viewFlagHelp is the help of --view, on run and resume.
const viewFlagHelp = "serve polyloop view on this address while the command runs (e.g. 127.0.0.1:8686), with the model's text as it streams"

// sinkShutdownTimeout bounds the flush of traces at exit, so that a collector
// that does not answer cannot hold the command (and its Ctrl-C) for long.
const sinkShutdownTimeout = 5 * time.Second

// runSinks are the event sinks of one run or resume.
type runSinks struct {
	sinks []polyloop.EventSink
	otel  *otelsink.Sink
	close func()
}

// ended tells the trace exporter how an invocation ended without a
// run_finished event: its spans end with the error (canceled, deadline
// exceeded, or the error's type) instead of "unfinished".
func (r *runSinks) ended(runID string, err error) {
	if err != nil && r.otel != nil {
		r.otel.EndRun(runID, err)
	}
}

// eventSinks builds the event sinks of a run: the progress lines on stderr
// (unless quiet), JSON lines in a file (--events), and OpenTelemetry traces
// when OTEL_EXPORTER_OTLP_ENDPOINT is set. close flushes and closes them.
func (a *app) eventSinks(ctx context.Context, f sinkFlags) (*runSinks, error) {
	var sinks []polyloop.EventSink
	var closers []func() error
	if !f.quiet {
		sinks = append(sinks, newProgress(a.terminalErr()))
	}
	if f.events != "" {
		file, err := os.OpenFile(f.events, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("--events: %w", err)
		}
		sinks = append(sinks, slogsink.New(slog.New(slog.NewJSONHandler(file, nil)), slogsink.Options{}))
		closers = append(closers, file.Close)
	}
	otel, shutdown, err := otelsink.NewFromEnv(ctx)
	if err != nil {
		for _, c := range closers {
			_ = c()
		}
		return nil, fmt.Errorf("OpenTelemetry from the environment: %w", err)
	}
	if otel != nil {
		sinks = append(sinks, otel)
		closers = append(closers, func() error {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sinkShutdownTimeout)
			defer cancel()
			return shutdown(sctx)
		})
	}
	closeAll := func() {
		var errs []error
		for _, c := range closers {
			errs = append(errs, c())
		}
		if err := errors.Join(errs...); err != nil {
			fmt.Fprintln(a.stderr, "polyloop: closing event sinks:", err)
		}
	}
	return &runSinks{sinks: sinks, otel: otel, close: closeAll}, nil
}
