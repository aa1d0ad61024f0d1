package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/otelsink"
	"github.com/polyloop/polyloop/slogsink"
)

// sinkFlags are the event flags of run and resume.
type sinkFlags struct {
	quiet  bool
	events string
}

// eventSinks builds the event sinks of a run: the progress lines on stderr
// (unless quiet), JSON lines in a file (--events), and OpenTelemetry traces
// when OTEL_EXPORTER_OTLP_ENDPOINT is set. The returned function flushes and
// closes them.
func (a *app) eventSinks(ctx context.Context, f sinkFlags) ([]polyloop.EventSink, func(), error) {
	var sinks []polyloop.EventSink
	var closers []func() error
	if !f.quiet {
		sinks = append(sinks, newProgress(a.stderr))
	}
	if f.events != "" {
		file, err := os.OpenFile(f.events, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("--events: %w", err)
		}
		sinks = append(sinks, slogsink.New(slog.New(slog.NewJSONHandler(file, nil)), slogsink.Options{}))
		closers = append(closers, file.Close)
	}
	otel, shutdown, err := otelsink.NewFromEnv(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("OpenTelemetry from the environment: %w", err)
	}
	if otel != nil {
		sinks = append(sinks, otel)
		closers = append(closers, func() error { return shutdown(context.WithoutCancel(ctx)) })
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
	return sinks, closeAll, nil
}
