package polylooptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// inFlightHold is how long a call is left blocked before its context is
// cancelled (or its deadline passes) in the in-flight checks.
const inFlightHold = 100 * time.Millisecond

// returnsPromptly calls f, whose context is already done, and returns f's
// error; it fails if f does not return within e.cancelWithin.
func returnsPromptly(e *env, f func() error) error {
	res := make(chan error, 1)
	go func() { res <- f() }()
	select {
	case err := <-res:
		return err
	case <-time.After(e.cancelWithin):
		return &lateError{within: e.cancelWithin}
	}
}

// lateError is the failure of a call that did not return in time once its
// context was done.
type lateError struct{ within time.Duration }

func (l *lateError) Error() string {
	return fmt.Sprintf("the call did not return within %v of its context being done", l.within)
}

// cancelError checks err, returned by a call whose context ended with
// ctxErr: it must be non-nil and errors.Is one of ctxErr and also.
func cancelError(err, ctxErr error, what string, also ...error) error {
	var late *lateError
	switch {
	case errors.As(err, &late):
		return broke(ruleCancelPromptly, "%s: %w", what, err)
	case err == nil:
		return broke(ruleCancelError, "%s returned a nil error although its context was done (%v)", what, ctxErr)
	case errors.Is(err, ctxErr):
		return nil
	}
	for _, a := range also {
		if errors.Is(err, a) {
			return nil
		}
	}
	return broke(ruleCancelError, "%s returned %q (%T), which is not errors.Is the context's error %q: wrap ctx.Err() with %%w", what, err, err, ctxErr)
}

// inFlight starts f, lets it block, then ends its context — by cancelling it,
// or by letting a deadline pass — and checks that f returns promptly with
// the context's error (or one of also) and leaves no goroutine behind.
func inFlight(e *env, what string, f func(ctx context.Context) error, deadline bool, also ...error) error {
	base := goroutineBaseline()
	var ctx context.Context
	var cancel context.CancelFunc
	if deadline {
		ctx, cancel = context.WithTimeout(e.ctx, inFlightHold)
	} else {
		ctx, cancel = context.WithCancel(e.ctx)
	}
	defer cancel()
	res := make(chan error, 1)
	go func() { res <- f(ctx) }()
	err, ok := awaitEnd(e, ctx, cancel, res, deadline)
	if !ok {
		return fmt.Errorf("%s returned before its context was done (error %v); the harness's blocking call must block until cancelled", what, err)
	}
	if err := cancelError(err, ctx.Err(), what+" in flight", also...); err != nil {
		return err
	}
	return leaked(base, what+" in flight")
}

// cut shortens b for a failure message.
func cut(b []byte) string {
	const max = 512
	if len(b) <= max {
		return string(b)
	}
	return fmt.Sprintf("%s... (%d bytes)", b[:max], len(b))
}

// cutJSON encodes v for a failure message.
func cutJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return cut(b)
}

// awaitEnd waits for the in-flight call to block for inFlightHold, ends its
// context (cancel, or the deadline passes by itself), and waits at most
// e.cancelWithin for the call's error. ok is false when the call returned
// while its context was still live.
func awaitEnd(e *env, ctx context.Context, cancel context.CancelFunc, res <-chan error, deadline bool) (err error, ok bool) {
	var hold <-chan time.Time
	end := ctx.Done()
	if !deadline {
		hold, end = time.After(inFlightHold), nil
	}
	select {
	case err := <-res:
		if ctx.Err() == nil {
			return err, false
		}
		return err, true
	case <-hold:
		cancel()
	case <-end:
	}
	<-ctx.Done()
	select {
	case err = <-res:
		return err, true
	case <-time.After(e.cancelWithin):
		return &lateError{within: e.cancelWithin}, true
	}
}
