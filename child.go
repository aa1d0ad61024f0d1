package polyloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/polyloop/polyloop/diag"
)

// Child is a sub-agent used from inside an action: the runner and agent of
// the child run.
type Child struct {
	Runner *Runner
	Agent  Agent
	// Key names the child within its parent action. Without a key, children
	// are numbered in call order within the action, which is stable only
	// when the action calls InvokeChild sequentially: a concurrent unkeyed
	// call is refused. Children started from concurrent goroutines need
	// distinct keys (no '/'; each once per action), so that a replayed
	// action meets each of them again under the same identity.
	Key string
}

// Receive says how the caller receives a child's outcome. Both handlers are
// optional.
type Receive[T any] struct {
	// Succeeded maps a completed child's result to the value InvokeChild
	// returns. Without it, the result is returned as is (T must then be
	// RunResult).
	Succeeded func(RunResult) (T, error)
	// Failed receives a child that finished with a stop reason other than
	// completed: it may substitute a value, or return an error to end the
	// operation. Without it, InvokeChild returns the *ChildFailure. Failed is
	// never called for errors: a PersistenceError, a cancellation, a seam
	// error or panic inside the child, a corrupt log or a snapshot mismatch
	// propagate whatever they look like.
	Failed func(*ChildFailure) (T, error)
}

// ChildFailure is a child run that finished with a stop reason other than
// completed: a failure business code may receive. Decide whether an error is
// one with AsChildFailure, not errors.As: an error that must propagate may
// wrap a value of this type.
type ChildFailure struct {
	ChildRunID string
	StopReason StopReason
	Result     RunResult
}

func (f *ChildFailure) Error() string {
	return fmt.Sprintf("polyloop: child run %q finished with %s", f.ChildRunID, f.StopReason)
}

// ErrNotInAction is returned by InvokeChild outside an action's Execute or a
// step's maintenance (Maintainer.Maintain).
var ErrNotInAction = errors.New("polyloop: InvokeChild called outside an action or a step's maintenance")

// InvokeChild runs a child agent on task, once, from inside an action or a
// step's maintenance (Maintainer.Maintain), and delivers its outcome as recv
// says. There is no implicit retry: a caller
// that wants to retry writes the loop and gets a new child per attempt (a
// new Key, or a new call index).
//
// The child's run id is derived from the parent run id, the step and the
// child's index or key, so a replayed parent action meets the same child: a
// finished child is not run again, an unfinished one is resumed — with the
// ResumeOptions the parent was resumed with, so that a configuration change
// the caller allowed for the parent is allowed for its children too.
//
// The parent's log records the reception (accepted; handled with the value a
// handler returned; or reception failed) before InvokeChild returns, so a
// resumed parent reuses it and never runs a handler that succeeded twice.
// Values returned by handlers must therefore marshal to JSON. A handler's
// error does not re-enter Failed: it is recorded and returned as is.
//
// InvokeChild must return before the Execute call of its action (or the
// Maintain call of its maintenance) returns: the reception is written into
// the action's place in the parent's log (or the step's maintenance). An
// action that returns while a child it started is still being received
// fails with ErrNotInAction (its step's state is then unknown), and a child
// started after the action returned is refused.
//
// Errors — anything Run or Resume of the child returns as an error — are
// returned as a *ChildError, and a failure to record the reception as a
// *PersistenceError: MustPropagate reports both, and the executor running
// the action must return them as errors.
func InvokeChild[T any](ctx context.Context, child Child, task Task, recv Receive[T]) (T, error) {
	var zero T
	scope, ok := ctx.Value(actionKey{}).(*actionScope)
	if !ok {
		return zero, ErrNotInAction
	}
	if child.Runner == nil {
		return zero, fmt.Errorf("%w: Child.Runner is nil", ErrInvalidConfig)
	}
	if recv.Succeeded == nil {
		if _, ok := any(RunResult{}).(T); !ok {
			return zero, fmt.Errorf("%w: without Succeeded, InvokeChild returns the RunResult, but T is %T", ErrInvalidConfig, zero)
		}
	}
	ref, ran, received, err := scope.startChild(child.Key)
	if err != nil {
		return zero, err
	}
	defer received()
	childID := ChildRunID(ref)
	if rec, again := scope.d.reception(childID); rec != nil {
		if again && rec.Maintenance && rec.unreceived() {
			if v, ok, err := receiveAgain(ctx, scope, child, rec, recv, ran); ok {
				return v, err
			}
		}
		return reuseReception[T](ctx, child, rec)
	}
	cctx := withoutStopRequest(ctx) // the child is part of the action in progress
	res, err := child.Runner.ResumeWith(cctx, childID, child.Agent, scope.d.opts)
	if errors.Is(err, ErrRunNotFound) {
		res, err = child.Runner.run(cctx, childID, child.Agent, task, &RunStarted{Parent: &ref})
	}
	ran() // a handler may start a fallback child
	if err != nil {
		return zero, &ChildError{ChildRunID: childID, Err: err} // an error, not a failure: never received
	}
	rec := &ChildReception{Step: ref.Step, Action: ref.Action, Index: ref.Index, Key: ref.Key, ChildRunID: childID, StopReason: res.StopReason,
		Maintenance: ref.Maintenance}
	if res.StopReason == StopCompleted {
		return receive(ctx, scope, rec, "succeeded", recv.Succeeded, res, func() (T, error) { return any(res).(T), nil })
	}
	f := &ChildFailure{ChildRunID: childID, StopReason: res.StopReason, Result: res}
	return receive(ctx, scope, rec, "failed", recv.Failed, f, func() (T, error) { return zero, f })
}

// receive runs the handler (or the default), records the reception, and
// returns what the handler returned.
func receive[T, A any](ctx context.Context, scope *actionScope, rec *ChildReception, name string,
	handler func(A) (T, error), arg A, dflt func() (T, error)) (T, error) {
	var v T
	var herr error
	if handler != nil {
		rec.Handler = name
		v, herr = handler(arg)
	} else {
		v, herr = dflt()
	}
	if herr != nil && (MustPropagate(herr) || ctx.Err() != nil) {
		// Not a reception that failed: a mechanism failure or a cancellation
		// inside the handler. Recorded as a reception, it would come back on
		// resume without its mark; it propagates unrecorded instead, and a
		// replay meets the handler again.
		return v, herr
	}
	switch {
	case handler != nil && herr != nil:
		rec.Reception, rec.Failure = ReceptionFailed, diag.From(herr)
		herr = &ReceptionError{ChildRunID: rec.ChildRunID, Handler: name, Failure: rec.Failure, cause: herr}
	case handler != nil:
		rec.Reception = ReceptionHandled
	default:
		rec.Reception = ReceptionAccepted
	}
	if herr == nil {
		raw, err := json.Marshal(v)
		if err != nil {
			return v, fmt.Errorf("polyloop: the value received from child %q does not marshal to JSON: %w", rec.ChildRunID, err)
		}
		rec.Value = raw
	}
	if err := scope.writeReception(ctx, rec); err != nil {
		return v, err
	}
	return v, herr
}

// receiveAgain hands a maintenance child's outcome that no handler
// received to the handlers of the configuration now in force, which a
// configuration change brought since (design 0020): the child does not run
// again (its stored result is read back); the handler for its outcome runs
// and its reception is recorded anew, once. ok is false when the
// configuration has no handler for it: the recorded outcome stands.
func receiveAgain[T any](ctx context.Context, scope *actionScope, child Child, prev *ChildReception, recv Receive[T], ran func()) (v T, ok bool, err error) {
	completed := prev.StopReason == StopCompleted
	if (completed && recv.Succeeded == nil) || (!completed && recv.Failed == nil) {
		return v, false, nil
	}
	res, err := child.Runner.Resume(withoutStopRequest(ctx), prev.ChildRunID, child.Agent)
	ran()
	if err != nil {
		return v, true, &ChildError{ChildRunID: prev.ChildRunID, Err: err}
	}
	rec := &ChildReception{Step: prev.Step, Action: prev.Action, Index: prev.Index, Key: prev.Key, ChildRunID: prev.ChildRunID,
		StopReason: res.StopReason, Maintenance: prev.Maintenance}
	if completed {
		v, err = receive(ctx, scope, rec, "succeeded", recv.Succeeded, res, nil)
		return v, true, err
	}
	f := &ChildFailure{ChildRunID: prev.ChildRunID, StopReason: res.StopReason, Result: res}
	v, err = receive(ctx, scope, rec, "failed", recv.Failed, f, nil)
	return v, true, err
}

// reuseReception returns what a recorded reception returned the first time:
// the same value, or an error with the same text.
func reuseReception[T any](ctx context.Context, child Child, rec *ChildReception) (T, error) {
	var v T
	switch {
	case rec.Reception == ReceptionFailed:
		return v, &ReceptionError{ChildRunID: rec.ChildRunID, Handler: rec.Handler, Failure: rec.Failure}
	case rec.Reception == ReceptionAccepted && rec.StopReason != StopCompleted:
		// The failure was delivered as is: deliver it again, with the
		// child's stored result.
		res, err := child.Runner.Resume(ctx, rec.ChildRunID, child.Agent)
		if err != nil {
			return v, &ChildError{ChildRunID: rec.ChildRunID, Err: err}
		}
		return v, &ChildFailure{ChildRunID: rec.ChildRunID, StopReason: rec.StopReason, Result: res}
	}
	if err := json.Unmarshal(rec.Value, &v); err != nil {
		return v, fmt.Errorf("polyloop: recorded reception of child %q: %w", rec.ChildRunID, err)
	}
	return v, nil
}

// ReceptionError is a Succeeded or Failed handler that failed. Its text is
// built from the recorded reception only, so a resumed parent that meets the
// recorded failure gets the same error text as the first time; the first
// time, Unwrap also reaches the handler's own error.
type ReceptionError struct {
	ChildRunID string
	Handler    string
	Failure    *diag.Diagnostic
	cause      error
}

func (e *ReceptionError) Error() string {
	msg := ""
	if e.Failure != nil {
		msg = e.Failure.Message
	}
	return fmt.Sprintf("polyloop: the %s handler for child %q failed: %s", e.Handler, e.ChildRunID, msg)
}

// Unwrap returns the handler's error when it ran in this process, or nil
// when the failure was read back from the log.
func (e *ReceptionError) Unwrap() error { return e.cause }

// AsChildFailure returns the *ChildFailure err carries, if it carries one
// that business code may receive: false when MustPropagate(err), whatever
// else err wraps. Use it instead of errors.As to decide whether to handle a
// child's failure.
func AsChildFailure(err error) (*ChildFailure, bool) {
	if MustPropagate(err) {
		return nil, false
	}
	var f *ChildFailure
	if errors.As(err, &f) {
		return f, true
	}
	return nil, false
}

// ChildRunID is the run id of the child a ParentRef names:
// "<parent>/<step>.<index>" for an unkeyed child, "<parent>/<step>:<key>"
// for a keyed one, with "-<action>" after the step for an action other than
// the first of its batch ("<parent>/<step>-<action>.<index>"). After the
// step's digits comes '.', ':' or '-', so no two forms collide, and since
// keys hold no '/', no child id collides with a grandchild's.
//
// A child of a step's maintenance is "<parent>/<step>~<index>", or
// "<parent>/<step>~:<key>" when keyed ('~' follows no other form's step).
func ChildRunID(ref ParentRef) string {
	at := ref.RunID + "/" + strconv.Itoa(ref.Step)
	if ref.Maintenance {
		at += "~"
		if ref.Key != "" {
			return at + ":" + ref.Key
		}
		return at + strconv.Itoa(ref.Index)
	}
	if ref.Action > 0 {
		at += "-" + strconv.Itoa(ref.Action)
	}
	if ref.Key != "" {
		return at + ":" + ref.Key
	}
	return at + "." + strconv.Itoa(ref.Index)
}
