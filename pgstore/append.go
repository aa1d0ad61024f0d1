package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/sqlrows"
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
	crcs  []int64
}

// encode checks that the records have consecutive seqs and encodes them,
// with their checksums.
func encode(runID string, records []polyloop.Record) (encodedRows, error) {
	data, err := polyloop.EncodeBatch(runID, records)
	if err != nil {
		return encodedRows{}, err
	}
	n := len(records)
	rows := encodedRows{seqs: make([]int64, n), kinds: make([]string, n), data: data, crcs: make([]int64, n)}
	for i, r := range records {
		rows.seqs[i], rows.kinds[i], rows.crcs[i] = r.Seq, string(r.Kind()), sqlrows.Checksum(data[i])
	}
	return rows, nil
}

// append writes one Append in two round trips on one connection:
//
//  1. read the run's summary and check, in Go, that the first record is the
//     run's next seq;
//  2. one pipelined batch — insert the records, write the summary folded
//     with RunSummary.Apply — which PostgreSQL runs as one implicit
//     transaction, committed (and synced) at its end.
//
// Between the two, another writer may append: it must have taken the same
// next seq, so the primary key (run_id, seq) makes one of the two inserts
// fail with a unique violation, which rolls that batch back whole and is
// reported as polyloop.ErrSeqConflict. The summary row can therefore only be
// overwritten by the writer whose records went in, and it was read after
// the last committed Append of the run.
func (s *Store) append(ctx context.Context, runID string, records []polyloop.Record, rows encodedRows) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return interpretError(ctx, fmt.Sprintf("append to run %q: acquire a connection", runID), err)
	}
	defer conn.Release()
	sum, err := sqlrows.ScanSummary(conn.QueryRow(ctx, s.q.summary, runID))
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return interpretError(ctx, fmt.Sprintf("read summary of run %q", runID), err)
	}
	if first := records[0].Seq; first != sum.Records {
		return conflict(runID, first, sum.Records)
	}
	if s.afterRead != nil {
		if err := s.afterRead(ctx, conn.Conn()); err != nil {
			return interpretError(ctx, "test hook", err)
		}
	}
	for _, r := range records {
		sum.Apply(r)
	}
	sum.RunID = runID
	args, err := sqlrows.SummaryArgs(sum)
	if err != nil {
		return fmt.Errorf("pgstore: encoding summary of run %q: %w", runID, err)
	}
	b := &pgx.Batch{}
	b.Queue(s.q.insert, runID, rows.seqs, rows.kinds, rows.data, rows.crcs)
	b.Queue(s.q.upsert, args...)
	if s.failInBatch != nil && s.failInBatch() {
		// Fails at run time (random() is volatile, never folded), after
		// the records and the summary were written.
		b.Queue(`SELECT 1 / (0 * random())::int`)
	}
	br := conn.SendBatch(ctx, b)
	if s.afterSend != nil {
		s.afterSend()
	}
	if err := br.Close(); err != nil {
		return interpretError(ctx, fmt.Sprintf("append to run %q", runID), err)
	}
	return nil
}
