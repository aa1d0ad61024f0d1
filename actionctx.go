package polyloop

import (
	"context"
	"fmt"
	"strings"
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
}

type actionKey struct{}

type actionScope struct {
	info ActionInfo
	d    *driver
	// maintenance: the scope of a step's maintenance, not of an action
	// (maintenance_driver.go); info then holds the run and the step.
	maintenance bool
	ops         map[string]bool // operation names used (Perform)

	mu       sync.Mutex
	unkeyed  int             // unkeyed children started, in call order
	inFlight int             // unkeyed children whose run has not returned
	active   int             // children of any kind not yet received
	closed   bool            // the action's Execute has returned
	keys     map[string]bool // keys used in this action
}

// startChild names the next child of the action. Unkeyed children are
// numbered in call order, which identifies them again on replay only if no
// two run at once: an unkeyed call while another unkeyed child's run is
// under way is refused. A key may be used once per action and may not
// contain '/', which separates generations of run ids. ran must be called
// when the child's run has returned (before any handler runs, so that a
// handler may start a fallback child); received when InvokeChild returns.
func (s *actionScope) startChild(key string) (ref ParentRef, ran, received func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ref = ParentRef{RunID: s.info.RunID, Step: s.info.Step, Action: s.info.Index, Key: key, Maintenance: s.maintenance}
	if s.closed {
		return ref, nil, nil, fmt.Errorf("%w: %s has already returned", ErrNotInAction, s.name())
	}
	if key != "" {
		if strings.Contains(key, "/") {
			return ref, nil, nil, fmt.Errorf("%w: child key %q contains '/'", ErrInvalidConfig, key)
		}
		if s.keys[key] {
			return ref, nil, nil, fmt.Errorf("%w: child key %q used twice in %s", ErrInvalidConfig, key, s.name())
		}
		if s.keys == nil {
			s.keys = map[string]bool{}
		}
		s.keys[key] = true
		ran = func() {}
	} else {
		if s.inFlight > 0 {
			return ref, nil, nil, fmt.Errorf("%w: children invoked concurrently from one action need distinct keys (Child.Key)", ErrInvalidConfig)
		}
		s.unkeyed++
		s.inFlight++
		ref.Index = s.unkeyed
		var once sync.Once
		ran = func() { once.Do(func() { s.mu.Lock(); s.inFlight--; s.mu.Unlock() }) }
	}
	s.active++
	received = func() { ran(); s.mu.Lock(); s.active--; s.mu.Unlock() }
	return ref, ran, received, nil
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
		info: ActionInfo{RunID: d.runID, Step: in.Step, Index: in.Index, ActionID: in.ActionID, Attempt: in.Attempt},
		d:    d,
	}
	return context.WithValue(ctx, actionKey{}, scope), scope
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

// writeReception records a reception in the parent's log, unless the action
// has already returned: then the reception would land after the step record,
// and it is refused (a replay of the action meets the child again).
func (s *actionScope) writeReception(ctx context.Context, rec *ChildReception) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("%w: %s returned before child %q was received", ErrNotInAction, s.name(), rec.ChildRunID)
	}
	return s.d.writeReception(ctx, rec)
}
