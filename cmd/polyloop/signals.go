package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/polyloop/polyloop"
)

// interruption is how run and resume take SIGINT and SIGTERM. Before the
// run starts (loading the agent, opening the store), a signal cancels at
// once. Once it runs, the first signal asks it to stop at the next step
// boundary — the action in progress finishes and is recorded — and the
// second cancels at once.
type interruption struct {
	ctx    context.Context
	cancel context.CancelFunc
	stopCh chan struct{}
	stderr io.Writer

	mu       sync.Mutex
	running  bool
	stopped  bool // a stop at the next boundary was asked
	canceled bool // the run was cancelled by a signal
	sigs     chan os.Signal
	done     chan struct{}
}

func newInterruption(parent context.Context, stderr io.Writer) *interruption {
	ctx, cancel := context.WithCancel(parent)
	in := &interruption{cancel: cancel, stopCh: make(chan struct{}), stderr: stderr,
		sigs: make(chan os.Signal, 2), done: make(chan struct{})}
	in.ctx = polyloop.WithStopRequest(ctx, in.stopCh)
	signal.Notify(in.sigs, os.Interrupt, syscall.SIGTERM)
	go in.watch()
	return in
}

func (in *interruption) watch() {
	for {
		select {
		case sig := <-in.sigs:
			in.handle(sig)
		case <-in.done:
			return
		}
	}
}

func (in *interruption) handle(sig os.Signal) {
	in.mu.Lock()
	defer in.mu.Unlock()
	switch {
	case in.canceled:
	case in.running && !in.stopped:
		in.stopped = true
		close(in.stopCh)
		fmt.Fprintf(in.stderr, "%s: stopping at the next step boundary (the action in progress finishes and is recorded); %s again to cancel at once\n", signalName(sig), signalName(sig))
	default:
		in.canceled = true
		in.cancel()
		if in.running {
			fmt.Fprintf(in.stderr, "%s again: cancelling at once\n", signalName(sig))
		}
	}
}

func signalName(sig os.Signal) string {
	if sig == os.Interrupt {
		return "SIGINT"
	}
	return "SIGTERM"
}

// begin marks the start of the run: from now on the first signal asks for
// a stop at the next boundary.
func (in *interruption) begin() {
	in.mu.Lock()
	in.running = true
	in.mu.Unlock()
}

// canceled reports whether a signal cancelled the command's context.
func (in *interruption) wasCanceled() bool {
	_, c := in.state()
	return c
}

// state reports what the signals did.
func (in *interruption) state() (stopAsked, canceled bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.stopped, in.canceled
}

func (in *interruption) close() {
	signal.Stop(in.sigs)
	close(in.done)
	in.cancel()
}
