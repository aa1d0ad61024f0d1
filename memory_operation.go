package polyloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/polyloop/polyloop/diag"
)

// Operation is one operation of a step's maintenance whose outcome the
// parent's log records (Perform): a memory write, a view adjustment, the
// fixing of what a proposal is made from.
type Operation[T any] struct {
	// Name identifies the operation within its step's maintenance: each
	// name once per step ("memory", "view.2"…). A resume finds the
	// operation's record by it.
	Name string
	// WriteID is the idempotency key the operation gives its store, kept
	// in the record for people (derive it from the run, the step and the
	// operation, so that a re-issued write finds its own commit).
	WriteID string
	// Do performs the operation once.
	Do func(ctx context.Context) (T, error)
	// Failed receives a failure of Do that business may receive: it may
	// substitute a value (the maintenance goes on with it) or return an
	// error. Nil: the failure is recorded and returned as an
	// *OperationError. Failed is never called for an error that must
	// propagate (MustPropagate: a *PersistenceError, a *ChildError, a
	// *PublicationError) nor for a cancellation, whatever they look like.
	Failed func(error) (T, error)
}

// ErrNotInMaintenance is returned by Perform outside a Maintainer's Maintain.
var ErrNotInMaintenance = errors.New("polyloop: Perform called outside a step's maintenance")

// Perform runs a maintenance operation once and records its outcome in the
// parent's log before it returns, so that a resumed run reuses the outcome
// and never performs the operation again:
//   - Do returned a value: recorded "done" with the value.
//   - Do's effect is established but its publication failed (a
//     *PublicationError): recorded "unpublished" with the value and the
//     failure, and the error is returned. A resume reuses the value and
//     goes on: nothing is written or published again.
//   - Do failed in a way business may receive: Failed's value is recorded
//     "received" with the failure; without Failed, or when Failed fails,
//     the failure is recorded "failed" and returned as an *OperationError
//     (a resume returns the same error again).
//   - Do returned an error that must propagate, or ctx is done: nothing is
//     recorded and the error is returned; a resume performs the operation
//     again (under its write id).
//
// Values must marshal to JSON. Perform must return before the Maintain call
// that started it does. A store failure recording the outcome is a
// *PersistenceError.
func Perform[T any](ctx context.Context, op Operation[T]) (T, error) {
	var zero T
	scope, ok := ctx.Value(actionKey{}).(*actionScope)
	if !ok || !scope.maintenance {
		return zero, ErrNotInMaintenance
	}
	if op.Name == "" || op.Do == nil {
		return zero, fmt.Errorf("%w: an operation needs a Name and Do", ErrInvalidConfig)
	}
	done, err := scope.startOp(op.Name)
	if err != nil {
		return zero, err
	}
	defer done()
	rec := &MaintenanceOp{Step: scope.info.Step, Name: op.Name, WriteID: op.WriteID}
	var v T
	if prev, again := scope.d.operation(op.Name); prev != nil {
		if !again || prev.Outcome != OpFailed || op.Failed == nil {
			return reuseOperation[T](prev)
		}
		v, err = receiveRecorded(ctx, op, rec, prev)
	} else {
		if err := ctx.Err(); err != nil {
			return zero, err
		}
		v, err = op.Do(ctx)
		v, err = settleOperation(ctx, op, rec, v, err)
	}
	if rec.Outcome == "" {
		return v, err // not recorded
	}
	if rec.Outcome != OpFailed {
		raw, merr := json.Marshal(v)
		if merr != nil {
			return v, fmt.Errorf("polyloop: the value of operation %q does not marshal to JSON: %w", op.Name, merr)
		}
		rec.Value = raw
	}
	if werr := scope.writeOp(ctx, rec); werr != nil {
		return v, werr
	}
	return v, err
}

// settleOperation decides the outcome of an operation that ran: it fills in
// the record — its Outcome stays empty when nothing is to be recorded — and
// returns the value and error Perform returns.
func settleOperation[T any](ctx context.Context, op Operation[T], rec *MaintenanceOp, v T, err error) (T, error) {
	var pub *PublicationError
	switch {
	case err == nil:
		rec.Outcome = OpDone
		return v, nil
	case errors.As(err, &pub):
		rec.Outcome, rec.Failure = OpUnpublished, diag.From(err)
		return v, err
	case MustPropagate(err) || ctx.Err() != nil:
		return v, err
	case op.Failed == nil:
		rec.Outcome, rec.Failure, rec.Receivable = OpFailed, diag.From(err), receivable(err)
		return v, &OperationError{Name: op.Name, Failure: rec.Failure, receivable: rec.Receivable, cause: err}
	}
	fv, ferr := op.Failed(err)
	switch {
	case ferr != nil && (MustPropagate(ferr) || ctx.Err() != nil):
		return fv, ferr
	case ferr != nil:
		rec.Outcome, rec.Failure, rec.Receivable = OpFailed, diag.From(ferr), receivable(ferr)
		return fv, &OperationError{Name: op.Name, Failure: rec.Failure, receivable: rec.Receivable, cause: ferr}
	}
	rec.Outcome, rec.Failure = OpReceived, diag.From(err)
	return fv, nil
}

// receiveRecorded hands a failure recorded "failed" to the Failed of the
// configuration now in force, which a configuration change brought since
// (design 0020): Do does not run again. The failure it receives is the
// recorded one, an *OperationError with the recorded diagnostic, which is
// Receivable when Do's error was; the new record carries that diagnostic,
// "received" with Failed's value, or "failed" again when Failed refuses it.
func receiveRecorded[T any](ctx context.Context, op Operation[T], rec, prev *MaintenanceOp) (T, error) {
	recorded := &OperationError{Name: op.Name, Failure: prev.Failure, receivable: prev.Receivable}
	rec.WriteID = prev.WriteID
	fv, ferr := op.Failed(recorded)
	switch {
	case ferr != nil && (MustPropagate(ferr) || ctx.Err() != nil):
		return fv, ferr
	case ferr == recorded:
		rec.Outcome, rec.Failure, rec.Receivable = OpFailed, prev.Failure, prev.Receivable
		return fv, recorded
	case ferr != nil:
		rec.Outcome, rec.Failure, rec.Receivable = OpFailed, diag.From(ferr), receivable(ferr)
		return fv, &OperationError{Name: op.Name, Failure: rec.Failure, receivable: rec.Receivable, cause: ferr}
	}
	rec.Outcome, rec.Failure = OpReceived, prev.Failure
	return fv, nil
}

// reuseOperation returns what a recorded operation returned the first time,
// its publication failure apart.
func reuseOperation[T any](rec *MaintenanceOp) (T, error) {
	var v T
	if rec.Outcome == OpFailed {
		return v, &OperationError{Name: rec.Name, Failure: rec.Failure, receivable: rec.Receivable}
	}
	if err := json.Unmarshal(rec.Value, &v); err != nil {
		return v, fmt.Errorf("polyloop: recorded operation %q: %w", rec.Name, err)
	}
	return v, nil
}

// OperationError is a maintenance operation that failed and was not
// received. Its text is built from the recorded outcome only, so a resumed
// run that meets the record gets the same text; the first time, Unwrap also
// reaches the operation's own error.
type OperationError struct {
	Name    string
	Failure *diag.Diagnostic
	// receivable: the operation's error was Receivable, as recorded.
	receivable bool
	cause      error
}

// Receivable implements Receivable: the operation's error said a policy
// may receive it — the first time, and as the log recorded it after.
func (e *OperationError) Receivable() bool { return e.receivable }

// Receivable is an error a maintenance policy may receive, such as a
// memory conflict or a view rejection (package memory). Perform records a
// failed operation's error as receivable when one in its chain says so,
// so that a policy a configuration change brings may receive the failure
// from the log, where the error itself is gone.
type Receivable interface {
	error
	Receivable() bool
}

// receivable reports whether an error of a failed operation may be
// received by a policy.
func receivable(err error) bool {
	var r Receivable
	return errors.As(err, &r) && r.Receivable()
}

func (e *OperationError) Error() string {
	msg := ""
	if e.Failure != nil {
		msg = e.Failure.Message
	}
	return fmt.Sprintf("polyloop: maintenance operation %q failed: %s", e.Name, msg)
}

// Unwrap returns the operation's error when it ran in this process, or nil
// when the failure was read back from the log.
func (e *OperationError) Unwrap() error { return e.cause }

// PublicationError is an operation whose effect is established — committed
// and installed — and whose required publication failed afterwards. It is
// neither a persistence failure (the effect stands, and is not written
// again) nor a failure business may receive: MustPropagate reports it.
type PublicationError struct {
	// Op names what was being published, such as "memory commit".
	Op  string
	Err error
}

func (e *PublicationError) Error() string {
	return fmt.Sprintf("polyloop: %s is established but its publication failed: %v", e.Op, e.Err)
}

// Unwrap returns the publication's error.
func (e *PublicationError) Unwrap() error { return e.Err }
