package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/polyloop/polyloop"
)

// A request is one Append waiting for the writer.
type request struct {
	runID string
	rows  []polyloop.Row
	// state moves from pending to claimed (by a leader, which then
	// answers on done) or to abandoned (by a caller whose context ended
	// first; leaders then skip the request), or to leading and back to
	// pending when its caller is made the next leader (commit.go).
	state atomic.Int32
	done  chan error
	// exec, when set, makes the request a write of the sweep ledger
	// (ledger.go) instead of an Append: the writer runs it in the batch's
	// transaction, as it inserts an Append's records. what names it in
	// errors.
	exec func(ctx context.Context, tx *sql.Tx) error
	what string
}

// label names the request in errors.
func (r *request) label() string {
	if r.exec != nil {
		return r.what
	}
	return fmt.Sprintf("append to run %q", r.runID)
}

const (
	pending int32 = iota
	claimed
	abandoned
	leading // chosen to lead the next batch (commit.go)
)

// Append appends rows to the run's log (see polyloop.Store). The first
// row's seq must be the run's next seq; otherwise Append fails with
// polyloop.ErrSeqConflict and writes nothing. It returns nil only after the
// transaction holding the rows has committed and been synced. An Append of
// no rows does nothing.
//
// If ctx ends before the writer has taken the Append into a transaction,
// Append returns an error wrapping ctx.Err() and nothing is written; once
// taken, Append waits for the commit (one sync) and reports its outcome.
func (s *Store) Append(ctx context.Context, runID string, rows []polyloop.Row) error {
	if len(rows) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlitestore: append to run %q: %w", runID, err)
	}
	err := s.submit(ctx, &request{runID: runID, rows: rows, done: make(chan error, 1)})
	if errors.Is(err, polyloop.ErrSeqConflict) {
		s.stats.conflicts.Add(1) // once, whichever path the batch took
	}
	return err
}
