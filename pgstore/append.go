package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/polyloop/polyloop"
)

// Append appends records to the run's log in one transaction (see
// polyloop.Store). The records must have consecutive seqs, the first being
// the run's next seq; otherwise Append fails with polyloop.ErrSeqConflict
// (wrong first seq, or another writer committed first) or ErrNotConsecutive,
// and writes nothing. It returns nil only after the commit. An Append of no
// records does nothing. Any failure is returned and never retried; after a
// failed commit the records may or may not be in the database.
func (s *Store) Append(ctx context.Context, runID string, records ...polyloop.Record) error {
	if len(records) == 0 {
		return nil
	}
	rows, err := encode(runID, records)
	if err != nil {
		return err
	}
	err = s.append(ctx, runID, records, rows)
	switch {
	case err == nil:
		s.stats.appends.Add(1)
		s.stats.commits.Add(1)
	case errors.Is(err, polyloop.ErrSeqConflict):
		s.stats.conflicts.Add(1)
	}
	return err
}

// encodedRows are the columns of the records to insert.
type encodedRows struct {
	seqs  []int64
	kinds []string
	data  [][]byte
}

// encode checks that the records have consecutive seqs and encodes them.
func encode(runID string, records []polyloop.Record) (encodedRows, error) {
	n := len(records)
	rows := encodedRows{seqs: make([]int64, n), kinds: make([]string, n), data: make([][]byte, n)}
	for i, r := range records {
		if i > 0 && r.Seq != records[i-1].Seq+1 {
			return rows, fmt.Errorf("%w: run %q: record %d has seq %d after seq %d", ErrNotConsecutive, runID, i, r.Seq, records[i-1].Seq)
		}
		b, err := r.MarshalJSON()
		if err != nil {
			return rows, fmt.Errorf("pgstore: run %q: encoding record %d: %w", runID, r.Seq, err)
		}
		rows.seqs[i], rows.kinds[i], rows.data[i] = r.Seq, string(r.Kind()), b
	}
	return rows, nil
}

// append runs the transaction: lock the run's summary row, check the
// sequence rule, insert the records and the new summary, commit.
func (s *Store) append(ctx context.Context, runID string, records []polyloop.Record, rows encodedRows) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return interpretError(ctx, fmt.Sprintf("begin append to run %q", runID), err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	sum, err := scanSummary(tx.QueryRow(ctx, s.q.lock, runID))
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return interpretError(ctx, fmt.Sprintf("lock run %q", runID), err)
	}
	if first := records[0].Seq; first != sum.Records {
		return conflict(runID, first, sum.Records)
	}
	if s.afterLock != nil {
		if err := s.afterLock(ctx, tx); err != nil {
			return interpretError(ctx, "test hook", err)
		}
	}
	for _, r := range records {
		sum.Apply(r)
	}
	sum.RunID = runID
	args, err := summaryArgs(sum)
	if err != nil {
		return fmt.Errorf("pgstore: encoding summary of run %q: %w", runID, err)
	}
	b := &pgx.Batch{}
	b.Queue(s.q.insert, runID, rows.seqs, rows.kinds, rows.data)
	b.Queue(s.q.upsert, args...)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return interpretError(ctx, fmt.Sprintf("append to run %q", runID), err)
	}
	if s.beforeCommit != nil {
		if err := s.beforeCommit(ctx, tx); err != nil {
			return interpretError(ctx, "test hook", err)
		}
	}
	return interpretError(ctx, fmt.Sprintf("commit append to run %q", runID), tx.Commit(ctx))
}
