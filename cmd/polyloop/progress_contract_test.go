package main

import (
	"bytes"
	"errors"
	"sync"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/polylooptest"
)

// The progress display is an EventSink like any other: it runs the kit.
func TestProgressConformance(t *testing.T) {
	polylooptest.TestEventSink(t, polylooptest.SinkHarness{
		New:        func(testing.TB) polyloop.EventSink { return newProgress(&lockedBuf{}) },
		NewFailing: func(testing.TB) polyloop.EventSink { return newProgress(failingWriter{}) },
		MustFail:   []polyloop.EventKind{polyloop.EventRunStarted, polyloop.EventRunFinished},
	})
}

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("stderr is gone") }
