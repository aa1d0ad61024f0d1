package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/sqlrows"
)

// commitBatch writes the Appends of batch in one transaction and answers
// each of them.
func (s *Store) commitBatch(batch []*request) {
	live, errs, err := s.writeAll(batch)
	answerAll(live, errs, err)
}

// writeAll claims the requests of batch that their callers still want and
// writes them in one transaction. The fast path checks each Append's first
// seq against the run's summary (from the cache, or read in the
// transaction) and writes without savepoints: a conflict is found before
// anything of that Append is written. If a statement fails unexpectedly, the
// transaction is rolled back and the batch is written again on the careful
// path, each Append in its own savepoint, so that the failure stays with its
// Append. A non-nil err applies to every claimed request; otherwise errs
// holds each one's outcome.
func (s *Store) writeAll(batch []*request) (live []*request, errs []error, err error) {
	live = batch[:0:0]
	for _, r := range batch {
		if r.state.CompareAndSwap(pending, claimed) {
			live = append(live, r)
		}
	}
	if len(live) == 0 {
		return nil, nil, nil
	}
	errs, err = s.writeBatch(live, false)
	if errors.Is(err, errFastPath) {
		errs, err = s.writeBatch(live, true)
	}
	return live, errs, err
}

// errFastPath reports that a statement failed on the fast path.
var errFastPath = errors.New("sqlitestore: statement failed on the fast path")

// writeBatch writes live in one transaction, carefully (savepoints,
// summaries read from the database) or not. A non-nil error applies to every
// Append of the batch; otherwise errs holds each Append's outcome.
func (s *Store) writeBatch(live []*request, careful bool) (errs []error, err error) {
	ctx := context.Background() // the batch is shared: no one caller's ctx may abort it
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return nil, interpretError("begin", err)
	}
	if err := s.cache.sync(ctx, tx, s.stmts.dataVersion); err != nil {
		tx.Rollback()
		return nil, err
	}
	defer func() {
		if p := recover(); p != nil { // free the write connection, then go on panicking
			tx.Rollback()
			s.cache.reset()
			panic(p)
		}
	}()
	w := &batchWriter{s: s, ctx: ctx, tx: tx, careful: careful, next: map[string]polyloop.RunSummary{}}
	errs = make([]error, len(live))
	wrote, appended := 0, 0
	for i, r := range live {
		errs[i] = w.apply(r)
		if errors.Is(errs[i], errFastPath) {
			tx.Rollback()
			s.cache.reset()
			return nil, errs[i]
		}
		if errs[i] == nil {
			wrote++
			if r.exec == nil {
				appended++
			}
		}
	}
	if wrote == 0 {
		tx.Rollback()
		return errs, nil
	}
	if err := tx.Commit(); err != nil {
		s.cache.reset() // the outcome is unknown
		for i := range errs {
			if errs[i] == nil {
				errs[i] = interpretError("commit", err)
			}
		}
		return errs, nil
	}
	s.cache.commit(w.next, careful)
	s.stats.commits.Add(1)
	s.stats.appends.Add(int64(appended))
	return errs, nil
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

// batchWriter writes the Appends of one transaction.
type batchWriter struct {
	s       *Store
	ctx     context.Context
	tx      *sql.Tx
	careful bool
	// next holds the summaries written in this transaction, so that a
	// run's second Append in the batch sees its first.
	next map[string]polyloop.RunSummary
}

// apply writes one Append. On the careful path it runs in a savepoint,
// rolled back on failure; on the fast path a statement failure is returned
// wrapped in errFastPath and the whole transaction must be dropped.
func (w *batchWriter) apply(r *request) error {
	if !w.careful {
		err := w.write(r)
		if err != nil && !errors.Is(err, polyloop.ErrSeqConflict) {
			err = fmt.Errorf("%w: %w", errFastPath, err)
		}
		return err
	}
	if _, err := w.tx.ExecContext(w.ctx, "SAVEPOINT append"); err != nil {
		return interpretError("savepoint", err)
	}
	err := w.write(r)
	if err != nil {
		if _, rerr := w.tx.ExecContext(w.ctx, "ROLLBACK TO append"); rerr != nil {
			err = errors.Join(err, interpretError("rollback to savepoint", rerr))
		}
	}
	if _, rerr := w.tx.ExecContext(w.ctx, "RELEASE append"); rerr != nil && err == nil {
		err = interpretError("release savepoint", rerr)
	}
	return err
}

// write applies one request: an Append's records, or a ledger write.
func (w *batchWriter) write(r *request) error {
	if r.exec != nil {
		return r.exec(w.ctx, w.tx)
	}
	return w.insert(r)
}

// summary returns the run's summary as of this point of the transaction.
func (w *batchWriter) summary(runID string) (polyloop.RunSummary, error) {
	if sum, ok := w.next[runID]; ok {
		return sum, nil
	}
	if !w.careful {
		if sum, ok := w.s.cache.get(runID); ok {
			return sum, nil
		}
	}
	sum, err := sqlrows.ScanSummary(w.tx.StmtContext(w.ctx, w.s.stmts.summary).QueryRowContext(w.ctx, runID))
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return sum, interpretError(fmt.Sprintf("read summary of run %q", runID), err)
	}
	return sum, nil
}

// insert checks the sequence rule against the run's summary, inserts the
// records and folds them into the summary. A conflict is found before
// anything is written.
func (w *batchWriter) insert(r *request) error {
	prev, err := w.summary(r.runID)
	if err != nil {
		return err
	}
	sum := prev
	if first := r.rows[0].Seq; first != sum.Records {
		return conflict(r.runID, first, sum.Records)
	}
	for _, row := range r.rows {
		if sh := row.Shared; sh != nil {
			if w.s.stmts.snapshot == nil {
				return fmt.Errorf("sqlitestore: run %q: the file (schema %d, read only) has no snapshots table", r.runID, firstSharedSchema-1)
			}
			if _, err := w.tx.StmtContext(w.ctx, w.s.stmts.snapshot).ExecContext(w.ctx, sh.Ref, sh.Data); err != nil {
				return interpretError(fmt.Sprintf("insert snapshot %s of run %q", sh.Ref, r.runID), err)
			}
		}
	}
	for from := 0; from < len(r.rows); from += maxInsertRows {
		if err := w.insertRows(r, from, min(from+maxInsertRows, len(r.rows))); err != nil {
			return err
		}
	}
	for _, row := range r.rows {
		sum.Apply(row.Record)
	}
	if w.s.afterInsert != nil {
		if err := w.s.afterInsert(r.runID, w.careful); err != nil {
			return err
		}
	}
	sum.RunID = r.runID
	if err := w.writeSummary(prev, sum); err != nil {
		return err
	}
	w.next[r.runID] = sum
	return nil
}

// maxInsertRows is the most records one INSERT statement writes.
const maxInsertRows = 4

// insertRows inserts the records of r from from up to to (at most
// maxInsertRows) with one statement.
func (w *batchWriter) insertRows(r *request, from, to int) error {
	args := make([]any, 0, 7*(to-from))
	for i := from; i < to; i++ {
		row := r.rows[i]
		args = append(args, r.runID, row.Seq, string(row.Kind), row.Data, sqlrows.CRC(row), sqlrows.ToNanos(row.Record.At))
		if w.s.stmts.shared {
			var snap *string
			if row.Shared != nil {
				snap = &row.Shared.Ref
			}
			args = append(args, snap)
		}
	}
	if _, err := w.tx.StmtContext(w.ctx, w.s.stmts.insert[to-from-1]).ExecContext(w.ctx, args...); err != nil {
		return interpretError(fmt.Sprintf("insert records %d to %d of run %q", r.rows[from].Seq, r.rows[to-1].Seq, r.runID), err)
	}
	return nil
}

// writeSummary writes the runs row of a run whose summary goes from prev
// (what the database holds) to sum, when it must be written (summary.go).
func (w *batchWriter) writeSummary(prev, sum polyloop.RunSummary) error {
	how := summaryWrite(prev, sum)
	if how == rowKeep {
		return nil
	}
	args, err := sqlrows.SummaryArgs(sum)
	if err != nil {
		return fmt.Errorf("sqlitestore: encoding summary of run %q: %w", sum.RunID, err)
	}
	st := w.s.stmts.replace
	if how == rowUpdate {
		st, args = w.s.stmts.update, updateArgs(args)
	}
	res, err := w.tx.StmtContext(w.ctx, st).ExecContext(w.ctx, args...)
	if err != nil {
		return interpretError(fmt.Sprintf("write summary of run %q", sum.RunID), err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("sqlitestore: summary of run %q: %d rows written (%v), want 1", sum.RunID, n, err)
	}
	return nil
}

// writeStmts are the writer's prepared statements.
type writeStmts struct {
	summary, replace, update, dataVersion, snapshot *sql.Stmt
	insert                                          [maxInsertRows]*sql.Stmt // insert[n-1] inserts n records
	// shared: the file has the snapshots table and the snap column (a
	// read-only store of a schema-7 file has neither, and never writes).
	shared bool
}

func (w *writeStmts) prepare(db *sql.DB, shared bool) error {
	w.shared = shared
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
	cols, one := `run_id, seq, kind, data, crc, at, snap`, `(?, ?, ?, ?, ?, ?, ?)`
	if !shared {
		cols, one = `run_id, seq, kind, data, crc, at`, `(?, ?, ?, ?, ?, ?)`
	}
	values := one
	for n := range w.insert {
		w.insert[n] = prep(`INSERT INTO records (` + cols + `) VALUES ` + values)
		values += `, ` + one
	}
	w.dataVersion = prep(`PRAGMA data_version`)
	if shared {
		w.snapshot = prep(`INSERT INTO snapshots (ref, data) VALUES (?, ?) ON CONFLICT (ref) DO NOTHING`)
	}
	w.replace = prep(replaceSummary)
	w.update = prep(updateSummary)
	return err
}

func (w *writeStmts) close() {
	for _, st := range append([]*sql.Stmt{w.summary, w.replace, w.update, w.dataVersion, w.snapshot}, w.insert[:]...) {
		if st != nil {
			st.Close()
		}
	}
}
