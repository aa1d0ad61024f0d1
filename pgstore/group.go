package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/polyloop/polyloop/internal/sqlrows"
)

// writeGroup writes the Appends of batch in one transaction and returns
// each one's outcome.
//
// The fast path sends every Append's statements — insert the records,
// write the summary folded with RunSummary.Apply — as one pipelined batch,
// which PostgreSQL runs as one implicit transaction, committed (and synced)
// at its end: one round trip for the group. If the server refuses a
// statement (an ERROR: the transaction rolled back, the connection lives)
// and the batch holds several Appends, it is written again on the careful
// path, each Append in its own savepoint, so that one run's conflict or
// failure stays with its Append. Any other failure — a lost connection, a
// fatal error, Options.GroupTimeout passing — leaves the outcome unknown
// and fails every Append of the batch.
func (s *Store) writeGroup(batch []*request) []error {
	errs := make([]error, len(batch))
	if len(batch) == 0 {
		return errs
	}
	// The batch is shared: no one caller's ctx may abort it; the group's
	// own timeout bounds it.
	ctx, cancel := context.WithTimeout(context.Background(), s.groupTimeout)
	defer cancel()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fill(errs, interpretError(ctx, "append: acquire a connection", err))
	}
	defer conn.Release()
	live := make([]int, 0, len(batch))
	for i, r := range batch {
		if errs[i] = s.prepare(ctx, conn, r); errs[i] == nil {
			live = append(live, i)
		}
	}
	if len(live) == 0 {
		return errs
	}
	inLockOrder(batch, live)
	err = retryDeadlock(func() error { return s.send(ctx, conn, batch, live) })
	if err != nil && len(live) > 1 && statementError(err) {
		s.careful(ctx, conn, batch, live, errs)
		return errs
	}
	for _, i := range live {
		errs[i] = s.settle(ctx, batch[i], err)
	}
	if err == nil {
		s.stats.commits.Add(1)
	}
	return errs
}

// send sends the statements of the Appends of batch at live as one
// pipelined batch and returns its outcome.
func (s *Store) send(ctx context.Context, conn *pgxpool.Conn, batch []*request, live []int) error {
	b := &pgx.Batch{}
	if len(live) == 1 {
		s.queueAppend(b, batch[live[0]])
	} else {
		s.queueGroup(b, batch, live)
	}
	br := conn.SendBatch(ctx, b)
	if s.afterSend != nil {
		s.afterSend()
	}
	return br.Close()
}

// inLockOrder sorts live, indexes of batch, by run id and first seq: the
// order in which a group inserts its records and writes its summaries, and
// the careful path its savepoints. Every transaction takes its row locks
// in that one order — all records, by (run_id, seq), then all summaries, by
// run_id —, so two groups racing on the same runs wait for each other
// instead of deadlocking, and the later one fails with the conflict the
// sequence rule gives it.
func inLockOrder(batch []*request, live []int) {
	slices.SortStableFunc(live, func(i, j int) int {
		a, b := batch[i], batch[j]
		if c := strings.Compare(a.runID, b.runID); c != 0 {
			return c
		}
		return cmp.Compare(a.rows.seqs[0], b.rows.seqs[0])
	})
}

// deadlockDetected is the SQLSTATE of a transaction PostgreSQL rolled back
// to break a deadlock.
const deadlockDetected = "40P01"

// retryDeadlock runs f, and once more if the server rolled it back to break
// a deadlock: nothing of it was written, and the retry meets the other
// transaction's outcome — a conflict if it wrote the same rows. (Groups
// take their locks in one order and do not deadlock each other; another
// writer of the tables, such as an older version of this package, might.)
func retryDeadlock(f func() error) error {
	err := f()
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == deadlockDetected {
		err = f()
	}
	return err
}

// prepare folds r's records into the summary it builds on and runs the
// afterRead hook (tests) on conn.
func (s *Store) prepare(ctx context.Context, conn *pgxpool.Conn, r *request) error {
	if s.afterRead != nil {
		if err := s.afterRead(ctx, conn.Conn()); err != nil {
			return interpretError(ctx, "test hook", err)
		}
	}
	if s.failInBatch != nil && !r.asked {
		r.fail, r.asked = s.failInBatch(), true
	}
	r.next = r.prev
	for _, rec := range r.rows.records {
		r.next.Apply(rec)
	}
	r.next.RunID = r.runID
	var err error
	if r.args, err = sqlrows.SummaryArgs(r.next); err != nil {
		return fmt.Errorf("pgstore: encoding summary of run %q: %w", r.runID, err)
	}
	return nil
}

// queueGroup queues the statements of the Appends of batch at live on b:
// one insert of every record and one write of every summary, whatever the
// number of Appends, so that the server parses and plans two statements
// per transaction. (Two Appends of one run in a group make the summary
// write fail — it would update a row twice —, and the careful path
// separates them.)
func (s *Store) queueGroup(b *pgx.Batch, batch []*request, live []int) {
	var recs struct {
		runs, kinds []string
		seqs, crcs  []int64
		data        [][]byte
		snaps       []*string
	}
	cols := make([][]any, 11)
	fail := false
	var refs []string
	var snaps [][]byte
	for _, i := range live {
		r := batch[i]
		refs, snaps = append(refs, r.rows.snapRefs...), append(snaps, r.rows.snapData...)
		for j := range r.rows.seqs {
			recs.runs = append(recs.runs, r.runID)
			recs.seqs = append(recs.seqs, r.rows.seqs[j])
			recs.kinds = append(recs.kinds, r.rows.kinds[j])
			recs.data = append(recs.data, r.rows.data[j])
			recs.crcs = append(recs.crcs, r.rows.crcs[j])
			recs.snaps = append(recs.snaps, r.rows.snaps[j])
		}
		for c, v := range r.args {
			cols[c] = append(cols[c], v)
		}
		fail = fail || r.fail
	}
	if len(refs) > 0 {
		b.Queue(s.q.snapshots, refs, snaps)
	}
	b.Queue(s.q.insertMany, recs.runs, recs.seqs, recs.kinds, recs.data, recs.crcs, recs.snaps)
	b.Queue(s.q.upsertMany, summaryArrays(cols)...)
	if fail {
		b.Queue(failing)
	}
}

// summaryArrays turns the columns of sqlrows.SummaryArgs rows into typed
// arrays, as upsertMany takes them.
func summaryArrays(cols [][]any) []any {
	out := make([]any, len(cols))
	for c, vs := range cols {
		switch vs[0].(type) {
		case string:
			out[c] = typed[string](vs)
		case *int64:
			out[c] = typed[*int64](vs)
		case int64:
			out[c] = typed[int64](vs)
		case bool:
			out[c] = typed[bool](vs)
		case *string:
			out[c] = typed[*string](vs)
		default:
			panic(fmt.Sprintf("pgstore: summary column %d has values of type %T", c, vs[0]))
		}
	}
	return out
}

func typed[T any](vs []any) []T {
	out := make([]T, len(vs))
	for i, v := range vs {
		out[i] = v.(T)
	}
	return out
}

// failing fails at run time (random() is volatile, never folded): the
// failInBatch hook's statement, queued after the writes.
const failing = `SELECT 1 / (0 * random())::int`

// queueAppend queues r's statements on b: a group of one, and each
// savepoint of the careful path.
func (s *Store) queueAppend(b *pgx.Batch, r *request) {
	if len(r.rows.snapRefs) > 0 {
		b.Queue(s.q.snapshots, r.rows.snapRefs, r.rows.snapData)
	}
	b.Queue(s.q.insert, r.runID, r.rows.seqs, r.rows.kinds, r.rows.data, r.rows.crcs, r.rows.snaps)
	b.Queue(s.q.upsert, r.args...)
	if r.fail {
		b.Queue(failing)
	}
}

// settle turns the outcome of r's transaction into its Append's result and
// keeps the cache in step.
func (s *Store) settle(ctx context.Context, r *request, err error) error {
	if err != nil {
		return interpretError(ctx, fmt.Sprintf("append to run %q", r.runID), err)
	}
	s.cache.put(r.next)
	return nil
}

// careful writes the Appends of batch at live in one transaction, each in
// a savepoint: an Append whose statements fail is rolled back alone.
func (s *Store) careful(ctx context.Context, conn *pgxpool.Conn, batch []*request, live []int, errs []error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		for _, i := range live {
			errs[i] = interpretError(ctx, fmt.Sprintf("append to run %q: begin", batch[i].runID), err)
		}
		return
	}
	defer tx.Rollback(ctx)
	var wrote []int
	for _, i := range live {
		r := batch[i]
		if errs[i] = retryDeadlock(func() error { return s.savepoint(ctx, tx, r) }); errs[i] == nil {
			wrote = append(wrote, i)
		}
	}
	if len(wrote) == 0 {
		return
	}
	err = tx.Commit(ctx)
	for _, i := range wrote {
		errs[i] = s.settle(ctx, batch[i], err)
	}
	if err == nil {
		s.stats.commits.Add(1)
	}
}

// savepoint writes r's statements in a savepoint of tx, rolled back if any
// of them fails.
func (s *Store) savepoint(ctx context.Context, tx pgx.Tx, r *request) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return interpretError(ctx, fmt.Sprintf("append to run %q: savepoint", r.runID), err)
	}
	b := &pgx.Batch{}
	s.queueAppend(b, r)
	if err := sp.SendBatch(ctx, b).Close(); err != nil {
		if rerr := sp.Rollback(ctx); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return interpretError(ctx, fmt.Sprintf("append to run %q", r.runID), err)
	}
	if err := sp.Commit(ctx); err != nil {
		return interpretError(ctx, fmt.Sprintf("append to run %q: release savepoint", r.runID), err)
	}
	return nil
}

// statementError reports whether err is a statement refused by a server
// whose session goes on (severity ERROR): the transaction was rolled back.
func statementError(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Severity == "ERROR"
}

func fill(errs []error, err error) []error {
	for i := range errs {
		errs[i] = err
	}
	return errs
}
