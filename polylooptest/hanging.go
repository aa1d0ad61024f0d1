package polylooptest

import (
	"context"
	"fmt"
	"sync"

	"github.com/polyloop/polyloop"
)

// signal is a channel closed at the first call, created on first use so
// that the zero value of the fakes is ready.
type signal struct {
	once sync.Once
	ch   chan struct{}
	fire sync.Once
}

func (s *signal) get() chan struct{} {
	s.once.Do(func() { s.ch = make(chan struct{}) })
	return s.ch
}

func (s *signal) close() {
	ch := s.get()
	s.fire.Do(func() { close(ch) })
}

// HangingExecutor is an executor whose actions block until their context is
// done, then return an error wrapping ctx.Err() — the behaviour the contract
// asks of a cancelled executor. With Executor and Tool set, only actions of
// Tool hang and the others go to Executor. The zero value hangs on every
// action. It describes itself as Executor does.
type HangingExecutor struct {
	// Executor handles the actions that do not hang; nil when all hang.
	Executor polyloop.ActionExecutor
	// Tool is the tool whose actions hang; "" for every action.
	Tool string

	started signal
}

// Execute implements polyloop.ActionExecutor.
func (x *HangingExecutor) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	if x.Executor != nil && x.Tool != "" && a.Tool != x.Tool {
		return x.Executor.Execute(ctx, a)
	}
	x.started.close()
	<-ctx.Done()
	return polyloop.ActionOutcome{}, fmt.Errorf("polylooptest: hanging action %q: %w", a.Tool, ctx.Err())
}

// Started is closed when the first action starts hanging.
func (x *HangingExecutor) Started() <-chan struct{} { return x.started.get() }

// Describe implements polyloop.Describer: the wrapped executor's identity,
// or the HangingExecutor's own without one.
func (x *HangingExecutor) Describe() polyloop.Component {
	if x.Executor != nil {
		return polyloop.Describe(x.Executor)
	}
	return polyloop.Component{Name: "polylooptest.HangingExecutor"}
}

// HangingModel is a model client whose calls block until their context is
// done, then return an error wrapping ctx.Err(). The zero value is ready.
type HangingModel struct {
	started signal
}

// Complete implements polyloop.ModelClient.
func (m *HangingModel) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	m.started.close()
	<-ctx.Done()
	return polyloop.ModelReply{}, fmt.Errorf("polylooptest: hanging model call (step %d): %w", req.Step, ctx.Err())
}

// Started is closed when the first call starts hanging.
func (m *HangingModel) Started() <-chan struct{} { return m.started.get() }
