package mcpexec

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Defaults of Options.StartTimeout and Options.CallTimeout.
const (
	// DefaultStartTimeout bounds New: starting or reaching the server,
	// initialize and tools/list.
	DefaultStartTimeout = 30 * time.Second
	// DefaultCallTimeout bounds one tools/call.
	DefaultCallTimeout = 10 * time.Minute
)

// ErrTimeout marks a server that did not answer within Options.StartTimeout
// (New's *StartError wraps it) or Options.CallTimeout (Execute's EnvError
// outcome says so). It is not the caller's context.DeadlineExceeded.
var ErrTimeout = errors.New("mcpexec: the server did not answer in time")

// timeoutError is a timeout of the executor's own, with the bound.
type timeoutError struct {
	after time.Duration
	what  string // "start timeout", "the call timeout"
}

func (e *timeoutError) Error() string {
	return fmt.Sprintf("did not answer within %v (%s)", e.after, e.what)
}

func (e *timeoutError) Is(target error) bool { return target == ErrTimeout }

// orDefault is d, or def when d is not positive.
func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// withTimeout bounds ctx by the executor's own timeout d, whose expiry is
// told apart from the caller's (timedOut).
func withTimeout(ctx context.Context, d time.Duration, what string) (context.Context, context.CancelFunc, *timeoutError) {
	te := &timeoutError{after: d, what: what}
	c, cancel := context.WithTimeoutCause(ctx, d, te)
	return c, cancel, te
}

// timedOut reports whether c ended at its own timeout te, not by its
// parent's end.
func timedOut(parent, c context.Context, te *timeoutError) bool {
	return parent.Err() == nil && errors.Is(context.Cause(c), te)
}
