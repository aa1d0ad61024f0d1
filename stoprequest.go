package polyloop

import (
	"context"
	"errors"
)

// ErrStopRequested is returned by Run and Resume when the caller asked the
// run to stop at the next step boundary (WithStopRequest) and it did: the
// action in progress, if any, finished and its step record is durable, so
// the run is unfinished with nothing of unknown outcome, and Resume
// continues it with the next step. It is not a stop reason: no RunFinished
// is written.
var ErrStopRequested = errors.New("polyloop: stopped at a step boundary on request")

type stopRequestKey struct{}

// WithStopRequest returns a context that carries a stop request: once stop
// is closed, the run driven with the context stops before its next model
// call — after the action in progress has finished and its step record is
// written — and Run or Resume returns ErrStopRequested. A limit that ends
// the run at that boundary still finishes it. Unlike cancelling ctx, a stop
// request never interrupts an effect under way.
//
// Child runs started by InvokeChild do not see the request: a child is part
// of its parent's action in progress, which runs to its end. A nil stop
// carries no request: WithStopRequest(ctx, nil) hides the one ctx carries
// from what runs under it.
func WithStopRequest(ctx context.Context, stop <-chan struct{}) context.Context {
	return context.WithValue(ctx, stopRequestKey{}, stop)
}

// withoutStopRequest hides a stop request from a child run.
func withoutStopRequest(ctx context.Context) context.Context {
	if ctx.Value(stopRequestKey{}) == nil {
		return ctx
	}
	return context.WithValue(ctx, stopRequestKey{}, (<-chan struct{})(nil))
}

// stopRequested reports whether ctx carries a stop request that was made.
func stopRequested(ctx context.Context) bool {
	stop, _ := ctx.Value(stopRequestKey{}).(<-chan struct{})
	if stop == nil {
		return false
	}
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// stopOnRequest ends the invocation at a step boundary: the facts already
// queued are written (not the next call's intent), and ErrStopRequested
// returned.
func (d *driver) stopOnRequest(ctx context.Context, rd ready) error {
	if err := d.settle(ctx, rd.facts()); err != nil {
		return err
	}
	return ErrStopRequested
}
