package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/polyloop/polyloop"
)

// writeLoop is the single writer. It takes the first queued Append, then
// every other Append already queued (up to MaxBatch) — those that arrived
// while the previous transaction was syncing — and commits them together.
func (s *Store) writeLoop() {
	defer close(s.done)
	batch := make([]*request, 0, s.opts.MaxBatch)
	for req := range s.queue {
		batch = append(batch[:0], req)
	gather:
		for len(batch) < s.opts.MaxBatch {
			select {
			case r, ok := <-s.queue:
				if !ok {
					break gather
				}
				batch = append(batch, r)
			default:
				break gather
			}
		}
		s.commitBatch(batch)
	}
}

// commitBatch writes the Appends of batch in one transaction, each in its own
// savepoint, and answers each of them.
func (s *Store) commitBatch(batch []*request) {
	live := batch[:0:0]
	for _, r := range batch {
		if r.state.CompareAndSwap(pending, claimed) {
			live = append(live, r)
		}
	}
	if len(live) == 0 {
		return
	}
	ctx := context.Background() // the batch is shared: no one caller's ctx may abort it
	errs := make([]error, len(live))
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		answerAll(live, errs, interpretError("begin", err))
		return
	}
	wrote := 0
	for i, r := range live {
		if errs[i] = s.applyOne(ctx, tx, r); errs[i] == nil {
			wrote++
		}
	}
	if wrote == 0 {
		tx.Rollback()
	} else if err := tx.Commit(); err != nil {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = interpretError("commit", err)
			}
		}
	} else {
		s.stats.commits.Add(1)
		s.stats.appends.Add(int64(wrote))
	}
	answerAll(live, errs, nil)
}

// answerAll answers every request: with err when it is non-nil, otherwise
// with the request's own error.
func answerAll(reqs []*request, errs []error, err error) {
	for i, r := range reqs {
		if err != nil {
			r.done <- err
		} else {
			r.done <- errs[i]
		}
	}
}

// applyOne writes one Append inside a savepoint: a conflict or a failure
// rolls back that Append alone.
func (s *Store) applyOne(ctx context.Context, tx *sql.Tx, r *request) error {
	if _, err := tx.ExecContext(ctx, "SAVEPOINT append"); err != nil {
		return interpretError("savepoint", err)
	}
	err := s.insert(ctx, tx, r)
	if err != nil {
		if _, rerr := tx.ExecContext(ctx, "ROLLBACK TO append"); rerr != nil {
			err = errors.Join(err, interpretError("rollback to savepoint", rerr))
		}
	}
	if _, rerr := tx.ExecContext(ctx, "RELEASE append"); rerr != nil && err == nil {
		err = interpretError("release savepoint", rerr)
	}
	if errors.Is(err, polyloop.ErrSeqConflict) {
		s.stats.conflicts.Add(1)
	}
	return err
}

// insert checks the sequence rule against the run's summary, inserts the
// records and folds them into the summary.
func (s *Store) insert(ctx context.Context, tx *sql.Tx, r *request) error {
	sum, err := scanSummary(tx.StmtContext(ctx, s.stmts.summary).QueryRowContext(ctx, r.runID))
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return interpretError(fmt.Sprintf("read summary of run %q", r.runID), err)
	}
	if first := r.recs[0].Seq; first != sum.Records {
		return conflict(r.runID, first, sum.Records)
	}
	ins := tx.StmtContext(ctx, s.stmts.insert)
	for i, rec := range r.recs {
		if _, err := ins.ExecContext(ctx, r.runID, rec.Seq, string(rec.Kind()), r.data[i]); err != nil {
			return interpretError(fmt.Sprintf("insert record %d of run %q", rec.Seq, r.runID), err)
		}
		sum.Apply(rec)
	}
	if s.afterInsert != nil {
		if err := s.afterInsert(); err != nil {
			return err
		}
	}
	sum.RunID = r.runID
	args, err := summaryArgs(sum)
	if err != nil {
		return fmt.Errorf("sqlitestore: encoding summary of run %q: %w", r.runID, err)
	}
	if _, err := tx.StmtContext(ctx, s.stmts.upsert).ExecContext(ctx, args...); err != nil {
		return interpretError(fmt.Sprintf("write summary of run %q", r.runID), err)
	}
	return nil
}

// writeStmts are the writer's prepared statements.
type writeStmts struct{ summary, insert, upsert *sql.Stmt }

func (w *writeStmts) prepare(db *sql.DB) error {
	var err error
	prep := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		st, err = db.Prepare(q)
		if err != nil {
			err = interpretError("prepare", err)
		}
		return st
	}
	w.summary = prep(`SELECT ` + summaryColumns + ` FROM runs WHERE run_id = ?`)
	w.insert = prep(`INSERT INTO records (run_id, seq, kind, data) VALUES (?, ?, ?, ?)`)
	w.upsert = prep(`INSERT OR REPLACE INTO runs (` + summaryColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	return err
}

func (w *writeStmts) close() {
	for _, st := range []*sql.Stmt{w.summary, w.insert, w.upsert} {
		if st != nil {
			st.Close()
		}
	}
}
