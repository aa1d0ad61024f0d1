package sweepqueue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/sweep/ledger"
	"github.com/riverqueue/river"
)

var errReadOnly = errors.New("sweepqueue: a queue opened with OpenExisting only reads")

// insertBatch is how many jobs one transaction inserts.
const insertBatch = 500

// Enqueued is what Enqueue did.
type Enqueued struct {
	// Inserted counts the jobs inserted; Duplicates the runs that already
	// had a live job (a second Enqueue of a sweep under way).
	Inserted, Duplicates int
}

// Enqueue records what the sweep has to do and inserts a job for each run
// to start, resume or score (sweep.Sweep.Pending: the tasks are checked,
// the manifest and the new ledger entries recorded in store), insertBatch
// jobs per transaction. A run that has a live job already is skipped:
// enqueuing a sweep twice, or while workers drive it, adds nothing. The
// ledger entry of a run is recorded before its job is inserted, so a crash
// between the two leaves an entry without a job, which the next Enqueue
// inserts; never a job without an entry.
func (q *Queue) Enqueue(ctx context.Context, s *sweep.Sweep, store sweep.Store) (Enqueued, error) {
	var res Enqueued
	if q.client == nil {
		return res, errReadOnly
	}
	batch := make([]river.InsertManyParams, 0, insertBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		n, dup, err := q.insert(ctx, batch)
		res.Inserted += n
		res.Duplicates += dup
		batch = batch[:0]
		return err
	}
	err := s.Pending(ctx, store, func(st ledger.State) error {
		priority := PriorityNew
		if st.Run != nil {
			priority = PriorityStarted
		}
		batch = append(batch, river.InsertManyParams{Args: RunArgs{Sweep: s.Name(), RunID: st.RunID}, InsertOpts: insertOpts(time.Time{}, priority)})
		if len(batch) == insertBatch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	return res, err
}

// insert inserts one batch in one transaction.
func (q *Queue) insert(ctx context.Context, batch []river.InsertManyParams) (inserted, duplicates int, err error) {
	tx, err := q.pool.Begin(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("sweepqueue: begin insert: %w", err)
	}
	defer tx.Rollback(ctx)
	results, err := q.client.InsertManyTx(ctx, tx, batch)
	if err != nil {
		return 0, 0, fmt.Errorf("sweepqueue: insert jobs: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, 0, fmt.Errorf("sweepqueue: commit jobs: %w", err)
	}
	for _, r := range results {
		if r.UniqueSkippedAsDuplicate {
			duplicates++
		} else {
			inserted++
		}
	}
	return inserted, duplicates, nil
}
