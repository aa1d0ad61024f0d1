package polyloop

import "context"

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
