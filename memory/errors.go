package memory

import (
	"errors"
	"fmt"
	"strings"

	"github.com/polyloop/polyloop"
)

// The failures of Memory and View fall in four classes, each with its own
// meaning (design record 0020):
//   - *InvalidWriteError: the input is wrong, or the write's id was
//     committed with other contents (ErrWriteIDReused); nothing was
//     written. An ordinary error.
//   - *ConflictError (Memory) and *RejectionError (View): the entity's own
//     check before the commit refused the write; nothing was written. A
//     failure business may receive: re-read and decide; the entity never
//     swaps the basis itself.
//   - *polyloop.PersistenceError: the port failed or broke its contract;
//     the outcome is unknown. The entity is then broken: it refuses writes
//     and current queries with a *ReloadRequiredError until Reload.
//   - *polyloop.PublicationError: the commit stands and is installed; its
//     publication failed. Nothing is written again.

// InvalidWriteError is a write or adjustment that cannot be applied as
// given: its input is wrong, or its id names another write — committed
// with other contents (then Err is ErrWriteIDReused).
type InvalidWriteError struct {
	WriteID string
	Reason  string
	Err     error
}

func (e *InvalidWriteError) Error() string {
	return fmt.Sprintf("memory: invalid write %q: %s", e.WriteID, e.Reason)
}

// Unwrap returns ErrWriteIDReused for a reused id, else nil.
func (e *InvalidWriteError) Unwrap() error { return e.Err }

func invalid(id, format string, args ...any) error {
	return &InvalidWriteError{WriteID: id, Reason: fmt.Sprintf(format, args...)}
}

// reused is the refusal of an id committed with other contents (what).
func reused(id, what string) error {
	return &InvalidWriteError{WriteID: id, Reason: "the id was committed with other " + what + "; give this write an id of its own", Err: ErrWriteIDReused}
}

// Stale is an entry whose live version is not the one a basis expects.
type Stale struct {
	EntryID
	Expected int64 `json:"expected"`
	Actual   int64 `json:"actual"`
}

// ConflictError is a write Memory's pre-commit check refused: its basis, or
// a delete's target, no longer matches the installed entries. Nothing was
// written.
type ConflictError struct {
	WriteID string
	Stale   []Stale
}

func (e *ConflictError) Error() string {
	parts := make([]string, len(e.Stale))
	for i, s := range e.Stale {
		parts[i] = fmt.Sprintf("%s is at version %d, the basis expects %d", s.EntryID, s.Actual, s.Expected)
	}
	return fmt.Sprintf("memory: write %q conflicts: %s", e.WriteID, strings.Join(parts, "; "))
}

// RejectionError is a view adjustment the View's pre-commit check refused:
// a source, a member or a version does not hold. Nothing was written.
type RejectionError struct {
	View    string
	WriteID string
	// What is "source", "member" or "version".
	What   string
	Reason string
}

func (e *RejectionError) Error() string {
	return fmt.Sprintf("memory: view %q refused adjustment %q (%s): %s", e.View, e.WriteID, e.What, e.Reason)
}

// ReloadRequiredError is what a Memory or View answers after a persistence
// failure, until Reload: it wraps that failure, so polyloop.MustPropagate
// reports it.
type ReloadRequiredError struct {
	Entity string
	Cause  error
}

func (e *ReloadRequiredError) Error() string {
	return fmt.Sprintf("memory: %s refuses to work until it is reloaded from its store, after: %v", e.Entity, e.Cause)
}

// Unwrap returns the persistence failure.
func (e *ReloadRequiredError) Unwrap() error { return e.Cause }

// IsReceivable reports whether err is a failure business may receive: a
// *ConflictError or a *RejectionError, and nothing that must propagate.
func IsReceivable(err error) bool {
	if polyloop.MustPropagate(err) {
		return false
	}
	// A *ConflictError or *RejectionError, or such a failure read back from
	// the log (a *polyloop.OperationError recorded receivable), handed to a
	// policy a configuration change brought.
	var r polyloop.Receivable
	return errors.As(err, &r) && r.Receivable()
}

// Receivable implements polyloop.Receivable: a conflict found before the
// commit is a failure a policy may receive.
func (e *ConflictError) Receivable() bool { return true }

// Receivable implements polyloop.Receivable: a rejection found before the
// commit is a failure a policy may receive.
func (e *RejectionError) Receivable() bool { return true }

// persistenceError marks a port failure, keeping a *PersistenceError the
// port returned itself.
func persistenceError(op, runID string, err error) error {
	var pe *polyloop.PersistenceError
	if errors.As(err, &pe) {
		return err
	}
	return &polyloop.PersistenceError{Op: op, RunID: runID, Err: err}
}
