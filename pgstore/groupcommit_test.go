package pgstore

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/storetest"
)

// TestStaleCacheCaught: another Store (another pool, as another process
// would be) appends to a run this Store has cached. This Store's next
// Append at its cached seq collides on the primary key — a conflict, and
// nothing of it is written; an Append at the seq the database holds is
// then written (the entry was dropped and the summary read). An Append at a
// seq past the cache's is checked against the database, not refused.
func TestStaleCacheCaught(t *testing.T) {
	ctx := context.Background()
	s1 := openT(t)
	s2, err := Open(ctx, dsn(t), &Options{Schema: s1.schema})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	log := storetest.Prefix("r", 12)
	steps := []struct {
		s       *Store
		from    int
		wantErr error
	}{
		{s1, 0, nil},                     // s1 caches r at 2
		{s2, 2, nil},                     // r is at 4 behind s1's back
		{s1, 2, polyloop.ErrSeqConflict}, // cached 2: the primary key refuses
		{s1, 4, nil},                     // entry dropped: read, written
		{s2, 4, polyloop.ErrSeqConflict}, // s2 cached 4: refused
		{s2, 6, nil},                     // s2 reads and writes
		{s1, 8, nil},                     // s1 cached 6, asked 8: read, written
		{s1, 6, polyloop.ErrSeqConflict}, // below the cached seq: refused
		{s2, 10, nil},
	}
	for i, st := range steps {
		err := polyloop.AppendRecords(ctx, st.s, "r", log[st.from:st.from+2]...)
		if (st.wantErr == nil) != (err == nil) || !errors.Is(err, st.wantErr) {
			t.Fatalf("step %d: Append at %d: %v, want %v", i, st.from, err, st.wantErr)
		}
	}
	storetest.SameLog(t, storetest.ReadAll(t, ctx, s1, "r"), log)
	sums, err := s1.ListRuns(ctx, polyloop.RunFilter{})
	if err != nil || len(sums) != 1 || sums[0].Records != int64(len(log)) {
		t.Fatalf("ListRuns: %+v, %v; want one run of %d records", sums, err, len(log))
	}
}

// TestGroupConflictFailsAlone commits one group by hand: an Append that
// collides on the primary key (its summary trusted, as a stale cache would
// have it), one whose statements fail and a second Append of a run already
// in the group fail alone; the others commit, all in one transaction.
func TestGroupConflictFailsAlone(t *testing.T) {
	ctx := context.Background()
	s := openT(t)
	la, lb, lc, ld := storetest.Prefix("a", 4), storetest.Prefix("b", 4), storetest.Prefix("c", 2), storetest.Prefix("d", 2)
	for _, run := range []struct {
		id  string
		log []polyloop.Record
	}{{"a", la[:2]}, {"b", lb[:2]}} {
		if err := polyloop.AppendRecords(ctx, s, run.id, run.log...); err != nil {
			t.Fatal(err)
		}
	}
	before := s.Stats()
	stale := polyloop.RunSummary{RunID: "b"} // b's records 0 and 1 exist
	reqs := []*request{
		mustRequest(t, s, "a", la[2:4], nil),
		mustRequest(t, s, "b", lb[:2], &stale),
		mustRequest(t, s, "c", lc, nil),
		mustRequest(t, s, "d", ld, nil),
		mustRequest(t, s, "c", lc, nil), // c's Append again, in the same group
	}
	reqs[3].fail, reqs[3].asked = true, true
	errs := s.writeGroup(reqs)
	if errs[0] != nil || !errors.Is(errs[1], polyloop.ErrSeqConflict) || errs[2] != nil || errs[3] == nil || errors.Is(errs[3], polyloop.ErrSeqConflict) ||
		!errors.Is(errs[4], polyloop.ErrSeqConflict) {
		t.Fatalf("outcomes %v; want nil, a conflict, nil, a failure that is not a conflict, a conflict", errs)
	}
	if c := s.Stats().Commits - before.Commits; c != 1 {
		t.Errorf("group made %d commits, want 1", c)
	}
	storetest.SameLog(t, storetest.ReadAll(t, ctx, s, "a"), la)
	storetest.SameLog(t, storetest.ReadAll(t, ctx, s, "b"), lb[:2])
	storetest.SameLog(t, storetest.ReadAll(t, ctx, s, "c"), lc)
	storetest.SameLog(t, storetest.ReadAll(t, ctx, s, "d"), nil)
	if err := polyloop.AppendRecords(ctx, s, "b", lb[2:4]...); err != nil {
		t.Fatalf("b's next Append after the group: %v", err)
	}
}

// mustRequest builds the request of an Append as Append does, building on
// prev when given.
func mustRequest(t *testing.T, s *Store, run string, recs []polyloop.Record, prev *polyloop.RunSummary) *request {
	t.Helper()
	r := &request{runID: run, rows: columnsOf(storetest.RowsOf(t, run, recs)), done: make(chan error, 1)}
	var err error
	if prev != nil {
		r.prev = *prev
	} else if r.prev, err = s.base(context.Background(), run, recs[0].Seq); err != nil {
		t.Fatal(err)
	}
	r.state.Store(claimed)
	return r
}

// TestRacingStores: two Stores on one schema (two processes would race
// so) append the same runs at once, groups of several runs on each side.
// Groups take their row locks in one order, so none deadlocks: every
// losing Append fails with ErrSeqConflict, as the Store contract says.
func TestRacingStores(t *testing.T) {
	a := openWith(t, Options{MaxConns: 8})
	b, err := Open(context.Background(), dsn(t), &Options{Schema: a.schema, MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	storetest.RacingWriters(t, context.Background(), []polyloop.Store{a, b}, 40, 3, 60)
}

// TestGroupTimeoutBoundsAHungGroup: a group whose connection hangs (a
// statement that sleeps past Options.GroupTimeout) fails its Append with an
// error wrapping context.DeadlineExceeded, though the caller's context has
// no deadline, and the Store goes on appending.
func TestGroupTimeoutBoundsAHungGroup(t *testing.T) {
	s := openWith(t, Options{GroupTimeout: 200 * time.Millisecond})
	ctx := context.Background()
	var hang atomic.Bool
	hang.Store(true)
	s.afterRead = func(ctx context.Context, conn *pgx.Conn) error {
		if hang.Load() {
			_, err := conn.Exec(ctx, `SELECT pg_sleep(30)`)
			return err
		}
		return nil
	}
	err := polyloop.AppendRecords(ctx, s, "hung", storetest.Started("hung", "ag"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung group: %v, want an error wrapping context.DeadlineExceeded", err)
	}
	hang.Store(false)
	if err := polyloop.AppendRecords(ctx, s, "after", storetest.Started("after", "ag")); err != nil {
		t.Fatalf("Append after the hung group: %v", err)
	}
	if l := storetest.ReadAll(t, ctx, s, "hung"); len(l) != 0 {
		t.Fatalf("hung group's run holds %d records, want 0", len(l))
	}
}
