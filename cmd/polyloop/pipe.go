package main

import (
	"errors"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// ignoreSIGPIPE keeps a closed standard output (`polyloop resume … | head`)
// from killing the process: Go's runtime dies of SIGPIPE on a write to a
// broken pipe on fd 1 or 2 unless the program asks for the signal. Asking
// for it (and dropping it) makes the write fail with EPIPE instead, which
// pipeWriter turns into "stop printing"; the run and the flush of its
// telemetry go on. Unlike signal.Ignore, a handled signal is reset to its
// default in the programs the CLI starts (shell commands, MCP servers).
func ignoreSIGPIPE() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}

// pipeWriter is a standard stream whose reader may go away. After a write
// fails with EPIPE, it stops writing and reports every write as done: what
// the command prints is for a reader who is no longer there, and what it
// does (the run, its log, its traces) must not depend on that reader.
type pipeWriter struct {
	w      io.Writer
	closed atomic.Bool
}

func (p *pipeWriter) Write(b []byte) (int, error) {
	if p.closed.Load() {
		return len(b), nil
	}
	n, err := p.w.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		p.closed.Store(true)
		return len(b), nil
	}
	return n, err
}

// Unwrap returns the stream itself (a terminal check looks at it).
func (p *pipeWriter) Unwrap() io.Writer { return p.w }
