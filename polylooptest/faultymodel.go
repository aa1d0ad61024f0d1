package polylooptest

import (
	"context"
	"fmt"
	"sync"

	"github.com/polyloop/polyloop"
)

// FaultyModel wraps a ModelClient and fails one call. It describes itself as
// the wrapped client does, so a run's snapshot is the same with or without
// the wrapper (a run stopped by the fault can be resumed with the bare
// client).
//
// Set the fields before first use; a FaultyModel is safe for concurrent use
// if Model is.
type FaultyModel struct {
	// Model is the wrapped client. Required.
	Model polyloop.ModelClient
	// FailOn makes the FailOn-th Complete call (1-based) fail without calling
	// Model; 0 never.
	FailOn int
	// Err is the error of the failing call; nil means one wrapping
	// ErrInjected.
	Err error

	mu    sync.Mutex
	calls int
}

// Complete implements polyloop.ModelClient.
func (m *FaultyModel) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	m.mu.Lock()
	m.calls++
	n := m.calls
	m.mu.Unlock()
	if n != m.FailOn {
		return m.Model.Complete(ctx, req)
	}
	if m.Err != nil {
		return polyloop.ModelReply{}, m.Err
	}
	return polyloop.ModelReply{}, fmt.Errorf("model call %d (step %d): %w", n, req.Step, ErrInjected)
}

// Calls returns the number of Complete calls made.
func (m *FaultyModel) Calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

// Describe implements polyloop.Describer with the wrapped client's identity.
func (m *FaultyModel) Describe() polyloop.Component { return polyloop.Describe(m.Model) }
