package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/storetest"
)

func openT(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "runs.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestDurabilitySettings(t *testing.T) {
	s := openT(t)
	var syncMode, busy int
	for name, conn := range map[string]*sql.DB{"write": s.write, "read": s.read} {
		if err := conn.QueryRow("PRAGMA synchronous").Scan(&syncMode); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRow("PRAGMA busy_timeout").Scan(&busy); err != nil {
			t.Fatal(err)
		}
		if syncMode != 2 || busy != int(DefaultBusyTimeout.Milliseconds()) {
			t.Errorf("%s connection: synchronous %d, busy_timeout %d; want 2 (FULL), %d", name, syncMode, busy, DefaultBusyTimeout.Milliseconds())
		}
	}
}

// TestConflictInBatchDoesNotFailOthers commits one batch by hand: a
// conflicting Append in the middle fails alone, the others commit, all in one
// transaction.
func TestConflictInBatchDoesNotFailOthers(t *testing.T) {
	ctx := context.Background()
	s := openT(t)
	la, lb, lc := storetest.Prefix("a", 4), storetest.Prefix("b", 4), storetest.Prefix("c", 4)
	if err := polyloop.AppendRecords(ctx, s, "b", lb[:2]...); err != nil {
		t.Fatal(err)
	}
	before := s.Stats()
	reqs := []*request{
		mustRequest(t, "a", la[:2]),
		mustRequest(t, "b", lb[3:4]), // gap: b's next seq is 2
		mustRequest(t, "c", lc[:2]),
		mustRequest(t, "a", la[2:4]), // a's second Append, after the first in the same batch
		mustRequest(t, "c", lc[:2]),  // duplicate of c's first Append
	}
	s.commitBatch(reqs)
	want := []error{nil, polyloop.ErrSeqConflict, nil, nil, polyloop.ErrSeqConflict}
	for i, r := range reqs {
		err := <-r.done
		if (want[i] == nil) != (err == nil) || (want[i] != nil && !errors.Is(err, want[i])) {
			t.Errorf("request %d (run %s): %v, want %v", i, r.runID, err, want[i])
		}
	}
	after := s.Stats()
	if c, a := after.Commits-before.Commits, after.Appends-before.Appends; c != 1 || a != 3 {
		t.Errorf("batch made %d commits and %d appends, want 1 and 3", c, a)
	}
	storetest.SameLog(t, storetest.ReadAll(t, ctx, s, "a"), la)
	storetest.SameLog(t, storetest.ReadAll(t, ctx, s, "b"), lb[:2])
	storetest.SameLog(t, storetest.ReadAll(t, ctx, s, "c"), lc[:2])
}

func mustRequest(t *testing.T, run string, recs []polyloop.Record) *request {
	t.Helper()
	return &request{runID: run, rows: storetest.RowsOf(t, run, recs), done: make(chan error, 1)}
}

// TestAbandonedRequestSkipped: an Append whose caller gave up before the
// writer took it is never written.
func TestAbandonedRequestSkipped(t *testing.T) {
	ctx := context.Background()
	s := openT(t)
	r := mustRequest(t, "x", storetest.Prefix("x", 2))
	r.state.Store(abandoned)
	s.commitBatch([]*request{r})
	if got := storetest.ReadAll(t, ctx, s, "x"); len(got) != 0 {
		t.Fatalf("abandoned Append wrote %d records", len(got))
	}
	if st := s.Stats(); st.Commits != 0 {
		t.Fatalf("abandoned Append made %d commits", st.Commits)
	}
}

// TestGroupCommitShares: 64 runs appending at once share commits, and
// conflicts raised by stale writers fail only their own Appends.
func TestGroupCommitShares(t *testing.T) {
	ctx := context.Background()
	s := openT(t)
	const runs, steps = 64, 5
	storetest.ConcurrentRuns(t, ctx, s, "run", runs, steps)
	st := s.Stats()
	appends := int64(runs * (1 + 2*steps))
	if st.Appends != appends || st.Conflicts != runs {
		t.Fatalf("stats %+v, want %d appends and %d conflicts", st, appends, runs)
	}
	if st.Commits >= st.Appends {
		t.Fatalf("%d commits for %d appends: no group commit", st.Commits, st.Appends)
	}
	t.Logf("%d appends in %d commits", st.Appends, st.Commits)
}

// TestFastPathFailureFallsBack: a statement failing for one Append of a
// batch rolls the fast path back; the careful path then commits the others
// and fails only that Append.
func TestFastPathFailureFallsBack(t *testing.T) {
	ctx := context.Background()
	s := openT(t)
	errBoom := errors.New("boom")
	la, lb, lc := storetest.Prefix("a", 2), storetest.Prefix("b", 2), storetest.Prefix("c", 2)
	reqs := []*request{mustRequest(t, "a", la), mustRequest(t, "b", lb), mustRequest(t, "c", lc)}
	calls := 0
	s.afterInsert = func(run string, _ bool) error {
		calls++
		if run == "b" {
			return errBoom
		}
		return nil
	}
	s.commitBatch(reqs)
	for i, want := range []error{nil, errBoom, nil} {
		err := <-reqs[i].done
		if !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Errorf("request %d: %v, want %v", i, err, want)
		}
	}
	if calls != 5 {
		t.Errorf("hook ran %d times, want 5 (a and b on the fast path, then a, b, c on the careful path)", calls)
	}
	if st := s.Stats(); st.Commits != 1 || st.Appends != 2 {
		t.Errorf("stats %+v, want 1 commit of 2 appends", st)
	}
	storetest.SameLog(t, storetest.ReadAll(t, ctx, s, "a"), la)
	storetest.SameLog(t, storetest.ReadAll(t, ctx, s, "b"), nil)
	storetest.SameLog(t, storetest.ReadAll(t, ctx, s, "c"), lc)
}

// TestCacheSeesOtherWriters: a run written through another Store on the
// same file is seen by this Store's next transaction (data_version drops its
// cached summaries).
func TestCacheSeesOtherWriters(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "runs.db")
	s1, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	s2, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	log := storetest.Prefix("r", 8)
	steps := []struct {
		s       *Store
		from    int
		wantErr error
	}{
		{s1, 0, nil}, {s2, 2, nil}, {s1, 2, polyloop.ErrSeqConflict}, {s1, 4, nil}, {s2, 4, polyloop.ErrSeqConflict}, {s2, 6, nil},
	}
	for i, st := range steps {
		err := polyloop.AppendRecords(ctx, st.s, "r", log[st.from:st.from+2]...)
		if (st.wantErr == nil) != (err == nil) || !errors.Is(err, st.wantErr) {
			t.Fatalf("step %d: Append at %d: %v, want %v", i, st.from, err, st.wantErr)
		}
	}
	storetest.SameLog(t, storetest.ReadAll(t, ctx, s1, "r"), log)
}

// TestSummaryRowWrittenOnChange: an Append that changes only the run's next
// seq and time writes no runs row (its columns stay as the first Append
// left them); the listing still folds every record, taking those two from
// the log's tail.
func TestSummaryRowWrittenOnChange(t *testing.T) {
	ctx := context.Background()
	s := openT(t)
	log := storetest.Prefix("r", 8)
	for i := 0; i < len(log); i += 2 {
		if err := polyloop.AppendRecords(ctx, s, "r", log[i:i+2]...); err != nil {
			t.Fatal(err)
		}
	}
	var rowRecords int64
	if err := s.read.QueryRow(`SELECT records FROM runs WHERE run_id = 'r'`).Scan(&rowRecords); err != nil {
		t.Fatal(err)
	}
	want := polyloop.RunSummary{RunID: "r"}
	for _, r := range log {
		want.Apply(r)
	}
	sums, err := s.ListRuns(ctx, polyloop.RunFilter{})
	if err != nil || len(sums) != 1 {
		t.Fatalf("ListRuns: %v, %v", sums, err)
	}
	if got := sums[0]; got.Records != want.Records || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Fatalf("listed %d records, updated %v; want %d, %v", got.Records, got.UpdatedAt, want.Records, want.UpdatedAt)
	}
	if rowRecords != 2 {
		t.Fatalf("runs row says %d records, want 2: rewritten by Appends that changed nothing else", rowRecords)
	}
}
