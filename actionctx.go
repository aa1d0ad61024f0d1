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
	RunID    string
	Step     int
	ActionID string
	Attempt  int
}

type actionKey struct{}

type actionScope struct {
	info ActionInfo
	d    *driver

	mu       sync.Mutex
	unkeyed  int             // unkeyed children started, in call order
	inFlight int             // unkeyed children not yet returned
	keys     map[string]bool // keys used in this action
}

// startChild names the next child of the action. Unkeyed children are
// numbered in call order, which identifies them again on replay only if no
// two run at once: a concurrent unkeyed call is refused. A key may be used
// once per action and may not contain '/', which separates generations of
// run ids. done must be called when the child has been received.
func (s *actionScope) startChild(key string) (ref ParentRef, done func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ref = ParentRef{RunID: s.info.RunID, Step: s.info.Step, Key: key}
	if key != "" {
		if strings.Contains(key, "/") {
			return ref, nil, fmt.Errorf("%w: child key %q contains '/'", ErrInvalidConfig, key)
		}
		if s.keys[key] {
			return ref, nil, fmt.Errorf("%w: child key %q used twice in action %s", ErrInvalidConfig, key, s.info.ActionID)
		}
		if s.keys == nil {
			s.keys = map[string]bool{}
		}
		s.keys[key] = true
		return ref, func() {}, nil
	}
	if s.inFlight > 0 {
		return ref, nil, fmt.Errorf("%w: children invoked concurrently from one action need distinct keys (Child.Key)", ErrInvalidConfig)
	}
	s.unkeyed++
	s.inFlight++
	ref.Index = s.unkeyed
	return ref, func() { s.mu.Lock(); s.inFlight--; s.mu.Unlock() }, nil
}

func withAction(ctx context.Context, d *driver, in *ActionIntent) context.Context {
	return context.WithValue(ctx, actionKey{}, &actionScope{
		info: ActionInfo{RunID: d.runID, Step: in.Step, ActionID: in.ActionID, Attempt: in.Attempt},
		d:    d,
	})
}

// ActionFromContext returns the action being executed, when ctx comes from
// the runner's call to Execute.
func ActionFromContext(ctx context.Context) (ActionInfo, bool) {
	s, ok := ctx.Value(actionKey{}).(*actionScope)
	if !ok {
		return ActionInfo{}, false
	}
	return s.info, true
}
