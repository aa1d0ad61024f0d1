package polyloop

import (
	"errors"
	"fmt"
)

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrCorruptLog marks a run log that breaks the log's structure or is
	// damaged: a gap in seq, a result without its intent, records after
	// RunFinished, steps out of order, a record whose checksum does not
	// match its bytes, invalid UTF-8. Returned errors are *CorruptLogError
	// values.
	ErrCorruptLog = errors.New("polyloop: corrupt run log")
	// ErrRunExists is returned by Run when the run id already has records.
	ErrRunExists = errors.New("polyloop: run already exists")
	// ErrRunNotFound is returned by Resume when the run id has no records.
	ErrRunNotFound = errors.New("polyloop: run not found")
	// ErrSnapshotMismatch is returned by Resume when the configuration's
	// snapshot hash differs from the stored one and no override was given.
	// Returned errors are *SnapshotMismatchError values.
	ErrSnapshotMismatch = errors.New("polyloop: configuration differs from the run's snapshot")
	// ErrLogVersion is returned when a log was written with a major version
	// of the format this library does not read.
	ErrLogVersion = errors.New("polyloop: unsupported log format version")
	// ErrInvalidConfig is returned for an agent or runner that cannot run.
	ErrInvalidConfig = errors.New("polyloop: invalid configuration")
	// ErrUncheckableBudget is returned (with ErrInvalidConfig) for an agent
	// with a cost budget whose model client cannot know the cost of its
	// calls (see CostReporter): the budget could never stop the run.
	ErrUncheckableBudget = errors.New("polyloop: the cost budget cannot be checked")
	// ErrRunNotStarted is joined to the error Run (or Fork) returns when
	// the run's first record was never written (a cancellation before the
	// first Append, or a first Append the store refused for the log's
	// limits, ErrJSONLimit): nothing exists for the run id, Resume would
	// say ErrRunNotFound, and Run with the same id starts it.
	ErrRunNotStarted = errors.New("polyloop: the run was not started (nothing was written)")
)

// PersistenceError is how every store failure reaches the caller. It wraps the
// store's own error (Unwrap gives it). The class does not prove the outcome: a
// failed Append may have been committed with its acknowledgement lost, so
// after a PersistenceError the library writes nothing more for the run and
// does not retry; the next Resume reads the authoritative log.
type PersistenceError struct {
	// Op is "append", "read" or "lease" (acquiring the run's lease).
	Op    string
	RunID string
	Err   error
}

func (e *PersistenceError) Error() string {
	return fmt.Sprintf("polyloop: store %s for run %q failed: %v", e.Op, e.RunID, e.Err)
}

// Unwrap returns the store's error.
func (e *PersistenceError) Unwrap() error { return e.Err }

// persistenceError wraps err unless it already is (or wraps) a
// *PersistenceError, whose identity is kept.
func persistenceError(op, runID string, err error) error {
	var pe *PersistenceError
	if errors.As(err, &pe) {
		return err
	}
	return &PersistenceError{Op: op, RunID: runID, Err: err}
}

// CorruptLogError says where a run log breaks the log's structure.
type CorruptLogError struct {
	RunID string
	// Seq is the position of the offending record (-1 when the log as a
	// whole is at fault).
	Seq    int64
	Kind   RecordKind
	Reason string
}

func (e *CorruptLogError) Error() string {
	if e.Seq < 0 {
		return fmt.Sprintf("polyloop: corrupt run log %q: %s", e.RunID, e.Reason)
	}
	if e.Kind == "" {
		return fmt.Sprintf("polyloop: corrupt run log %q at record %d: %s", e.RunID, e.Seq, e.Reason)
	}
	return fmt.Sprintf("polyloop: corrupt run log %q at record %d (%s): %s", e.RunID, e.Seq, e.Kind, e.Reason)
}

// Is makes errors.Is(err, ErrCorruptLog) true.
func (e *CorruptLogError) Is(target error) bool { return target == ErrCorruptLog }

// SnapshotMismatchError names the snapshot fields that differ.
type SnapshotMismatchError struct {
	RunID       string
	StoredHash  string
	CurrentHash string
	// Fields are paths such as "model.temperature" or "tools[1].replay".
	Fields []string
}

func (e *SnapshotMismatchError) Error() string {
	return fmt.Sprintf("polyloop: run %q: configuration differs from the stored snapshot in %v (stored %s, current %s); resume with AllowConfigChange to override",
		e.RunID, e.Fields, e.StoredHash, e.CurrentHash)
}

// Is makes errors.Is(err, ErrSnapshotMismatch) true.
func (e *SnapshotMismatchError) Is(target error) bool { return target == ErrSnapshotMismatch }

// ChildError carries an error from a child run started by InvokeChild that
// business code may not receive: a persistence failure, a cancellation, a
// seam error inside the child, a corrupt log, a snapshot mismatch. InvokeChild
// marks them at its boundary so that an executor that turns a function's
// error into an observation (as funcexec does) propagates them instead.
type ChildError struct {
	ChildRunID string
	Err        error
}

func (e *ChildError) Error() string {
	return fmt.Sprintf("polyloop: child run %q: %v", e.ChildRunID, e.Err)
}

// Unwrap returns the child's error.
func (e *ChildError) Unwrap() error { return e.Err }

// MustPropagate reports whether err carries a mark the library puts on
// errors that must leave the run as errors: a *PersistenceError, a
// *ChildError or a *PublicationError anywhere in its chain. An executor that reports a function's
// error as an action that ran and failed must return these errors instead:
// receiving them would turn a mechanism failure into an observation. The
// marks come from the boundary where the failure happened, never from an
// error's name or text.
func MustPropagate(err error) bool {
	var pe *PersistenceError
	var ce *ChildError
	var pub *PublicationError
	return errors.As(err, &pe) || errors.As(err, &ce) || errors.As(err, &pub)
}
