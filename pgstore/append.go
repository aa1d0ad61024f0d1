package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/sqlrows"
)

// Append appends rows to the run's log (see polyloop.Store). The first
// row's seq must be the run's next seq; otherwise Append fails with
// polyloop.ErrSeqConflict (wrong first seq, or another writer committed
// first) and writes nothing. It returns nil only after the commit of the
// transaction holding the rows, which may hold other runs' Appends too
// (group commit, commit.go). An Append of no rows does nothing. Any failure is returned and never
// retried; after a failed commit the records may or may not be in the
// database.
//
// If ctx ends before a transaction took the Append, Append returns an error
// wrapping ctx.Err() and nothing is written; once taken, Append waits for
// the commit and reports its outcome. The group transaction is bounded by
// Options.GroupTimeout, not by ctx.
func (s *Store) Append(ctx context.Context, runID string, rows []polyloop.Row) error {
	if len(rows) == 0 {
		return nil
	}
	req := &request{runID: runID, rows: columnsOf(rows), done: make(chan error, 1)}
	var err error
	if req.prev, err = s.base(ctx, runID, rows[0].Seq); err == nil {
		if err = ctx.Err(); err != nil {
			err = fmt.Errorf("pgstore: append to run %q: %w", runID, err)
		} else {
			err = s.submit(ctx, req)
		}
	}
	switch {
	case err == nil:
		s.stats.appends.Add(1)
	case errors.Is(err, polyloop.ErrSeqConflict):
		s.stats.conflicts.Add(1)
		s.cache.drop(runID)
	default:
		s.cache.drop(runID) // the outcome may be unknown
	}
	return err
}

// base returns the summary an Append starting at first builds on, or a
// conflict. From the cache when it knows the run: a first seq below the
// cached next seq is a conflict for sure (the run only grows), one equal to
// it is written on trust (the primary key catches a writer that appended
// since). A run the cache does not know starting at 0 builds on the empty
// summary (the primary key catches a run that exists). Otherwise the
// summary is read: one more round trip.
func (s *Store) base(ctx context.Context, runID string, first int64) (polyloop.RunSummary, error) {
	if sum, ok := s.cache.get(runID); ok {
		if first < sum.Records {
			return sum, conflict(runID, first, sum.Records)
		}
		if first == sum.Records {
			return sum, nil
		}
	} else if first == 0 {
		return polyloop.RunSummary{}, nil
	}
	sum, err := sqlrows.ScanSummary(s.pool.QueryRow(ctx, s.q.summary, runID))
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return sum, interpretError(ctx, fmt.Sprintf("read summary of run %q", runID), err)
	}
	if first != sum.Records {
		return sum, conflict(runID, first, sum.Records)
	}
	return sum, nil
}

// A request is one Append waiting for a group transaction.
type request struct {
	runID string
	rows  recordColumns
	prev  polyloop.RunSummary // what the Append builds on (base)
	next  polyloop.RunSummary // prev with the records folded in
	args  []any               // next as the runs row's values
	// fail, set once by the failInBatch hook (tests), adds a failing
	// statement after the Append's writes, on every attempt.
	fail, asked bool
	// state moves from pending to claimed (by a leader, which then
	// answers on done) or to abandoned (by a caller whose context ended
	// first; leaders then skip it), or to leading and back to pending when
	// its caller is made a leader (commit.go).
	state atomic.Int32
	done  chan error
}

const (
	pending int32 = iota
	claimed
	abandoned
	leading
)

// recordColumns are the columns of the rows to insert, and the records
// the rows encode (for the summary).
type recordColumns struct {
	seqs    []int64
	kinds   []string
	data    [][]byte
	crcs    []int64
	records []polyloop.Record
	// snaps is each row's shared snapshot ref, or nil (the snap column);
	// snapRefs and snapData are the shared snapshots the rows refer to
	// (polyloop.SnapshotKeeper), stored in the same transaction.
	snaps    []*string
	snapRefs []string
	snapData [][]byte
}

// size is the length of the rows' data.
func (e recordColumns) size() int {
	n := 0
	for _, d := range e.data {
		n += len(d)
	}
	return n
}

// columnsOf lays rows out as the insert's columns.
func columnsOf(rows []polyloop.Row) recordColumns {
	n := len(rows)
	c := recordColumns{seqs: make([]int64, n), kinds: make([]string, n), data: make([][]byte, n), crcs: make([]int64, n),
		records: make([]polyloop.Record, n), snaps: make([]*string, n)}
	for i, r := range rows {
		c.seqs[i], c.kinds[i], c.data[i], c.crcs[i], c.records[i] = r.Seq, string(r.Kind), r.Data, sqlrows.CRC(r), r.Record
		if sh := r.Shared; sh != nil {
			c.snapRefs, c.snapData = append(c.snapRefs, sh.Ref), append(c.snapData, sh.Data)
			c.snaps[i] = &c.snapRefs[len(c.snapRefs)-1]
		}
	}
	return c
}
