package polyloop

import (
	"context"
	"sync"
)

// ActionInfo identifies the action being executed. The runner puts it in the
// context passed to ActionExecutor.Execute, so that code running inside an
// action (for example InvokeChild) can derive stable identities from it.
type ActionInfo struct {
	RunID string
	Step  int
	// Index is the action's position in its step's batch (0-based).
	Index    int
	ActionID string
	Attempt  int
	// IdempotencyKey is the key the action is executed with
	// (IdempotencyKeyFor; IdempotencyKeyFromContext).
	IdempotencyKey string
}

type actionKey struct{}

// actionScope is what the runner knows of an action under way. It is
// also the context Execute is given: the caller's, whose value for
// actionKey is the scope (one allocation less per action than a
// context.WithValue beside it).
type actionScope struct {
	context.Context
	info ActionInfo
	d    *driver
	env  Environment // the run's environment, when it has one
	// maintenance: the scope of a step's maintenance, not of an action
	// (driver_memory.go); info then holds the run and the step.
	maintenance bool
	ops         map[string]bool // operation names used (Perform)

	mu       sync.Mutex
	unkeyed  int             // unkeyed children started, in call order
	inFlight int             // unkeyed children whose run has not returned
	active   int             // children of any kind not yet received
	closed   bool            // the action's Execute has returned
	keys     map[string]bool // keys used in this action
}

// close marks the action as returned and reports how many children are
// still being received: their receptions would land after the step record.
func (s *actionScope) close() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return s.active
}

func withAction(ctx context.Context, d *driver, in *ActionIntent) (context.Context, *actionScope) {
	scope := &actionScope{
		Context: ctx,
		info: ActionInfo{RunID: d.runID, Step: in.Step, Index: in.Index, ActionID: in.ActionID, Attempt: in.Attempt,
			IdempotencyKey: in.key(d.runID)},
		d:   d,
		env: d.env,
	}
	return scope, scope
}

// Value returns the scope for actionKey, and the caller's context's value
// for any other key.
func (s *actionScope) Value(key any) any {
	if _, ok := key.(actionKey); ok {
		return s
	}
	return s.Context.Value(key)
}

// ActionFromContext returns the action being executed, when ctx comes from
// the runner's call to Execute.
func ActionFromContext(ctx context.Context) (ActionInfo, bool) {
	s, ok := ctx.Value(actionKey{}).(*actionScope)
	if !ok || s.maintenance {
		return ActionInfo{}, false
	}
	return s.info, true
}
