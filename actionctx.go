package polyloop

import (
	"context"
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
	children int
}

// childRef names the next child of the action.
func (s *actionScope) childRef(key string) ParentRef {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.children++
	return ParentRef{RunID: s.info.RunID, Step: s.info.Step, Index: s.children, Key: key}
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
