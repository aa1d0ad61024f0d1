package polylooptest

import (
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// StoreHarness tells TestStore how to drive a Store. Only New is required;
// every check that needs a missing field is skipped with the reason logged.
type StoreHarness struct {
	// New returns a fresh, empty store (for a database: a fresh schema or
	// database). It is called once or more per subtest, from a goroutine
	// other than the test's: use t.TempDir and t.Cleanup.
	New func(t testing.TB) polyloop.Store
	// NewFaulty returns a fresh, empty store and a function that arms it:
	// once armed, the store's next Append fails partway through — after
	// writing some but not all of its rows, if the store writes them one
	// by one (a hook before commit, a failing statement) — and returns an
	// error. Nil: the InjectedFailure check is skipped.
	NewFaulty func(t testing.TB) (store polyloop.Store, arm func())
	// Reopen closes s and opens the same storage again, as a restarted
	// process would. Nil: the Reopen check is skipped.
	Reopen func(t testing.TB, s polyloop.Store) polyloop.Store
	// LargeBody is the size in bytes of the large observation of the round
	// trip (DefaultLargeBody when zero).
	LargeBody int
	// Skip names checks the implementation cannot honour, with the reason
	// logged when each is skipped. A name that is no check fails the suite.
	Skip map[string]string
	// Timeout is the watchdog of each subtest (DefaultTimeout when zero).
	Timeout time.Duration
}

// DefaultLargeBody is the size of the large observation in the round trip.
const DefaultLargeBody = 1 << 20

// TestStore checks that the stores made by h honour the Store contract:
// what a store owes — keeping rows — and nothing of the Runner's chores
// (encoding, limits, checksums, tool-call references), which the Runner
// does before any Append and after every read. Run it with -race.
//
// The kit's rows are sample records encoded (Record.MarshalJSON), with
// their checksums and their Records, as the Runner hands them. A store
// must give back each row's seq, kind, checksum and bytes; a
// polyloop.RecordKeeper, each row's record (compared by its encoding).
//
// Stores return plain errors (the Runner wraps them in a
// *polyloop.PersistenceError); the kit tests them with errors.Is, which sees
// through a PersistenceError an adapter returns itself.
//
// The checks (subtest names, usable as keys of h.Skip):
//   - EmptyLogForUnknownRun: ReadRows of a run without rows is no rows and
//     a nil error.
//   - RoundTrip: the rows of a record of each of the eight kinds, with
//     unicode, NUL, escapes and a large observation, read back as
//     appended, appended one by one and as one batch.
//   - RangedRead: ReadRowsFrom of a log appended in batches of 1 to 4 rows,
//     read in chunks of every size from 1 row to more than the log (from
//     one past the last row read until a chunk comes back short, as
//     polyloop.StreamLog reads), gives the log back row for row; a read
//     from every seq gives that seq's rows, at most the limit; a read past
//     the last row, or of a run without rows, gives none and a nil error;
//     a cancelled read gives no rows, or works; a log read in chunks while
//     another writer appends it 3 rows at a time ends at an Append's end.
//   - RowsNotRetained: rows whose bytes and fields the caller overwrites
//     once Append returned (the Runner reuses them) read back as appended.
//   - SeqRule: an Append whose first row is not the run's next sequence
//     number (a new run's first, a repeat, a gap, a negative seq) fails
//     with polyloop.ErrSeqConflict and writes nothing.
//   - BatchAllOrNothing: a batch whose first seq is taken leaves nothing,
//     not even its rows past the run's end; a good batch is all there.
//   - InjectedFailure: with NewFaulty, a batch that fails partway leaves
//     nothing.
//   - RunsIsolated: runs whose ids differ by case, by a prefix, or by
//     SQL wildcards have separate logs and sequence numbers.
//   - ConcurrentRuns: concurrent appends to different runs all succeed, in
//     order.
//   - ConcurrentWriters: writers racing for the same sequence number of one
//     run: exactly one wins, the others get polyloop.ErrSeqConflict.
//   - CancelledContext: an Append or ReadRows with a cancelled context
//     either works or fails with an error that errors.Is context.Canceled,
//     stays atomic, and leaves the store usable.
//   - Reopen: with Reopen, the rows and the sequence rule survive a
//     restart.
//   - ListRuns: if the store implements polyloop.RunLister, its summaries
//     are those that RunSummary.Apply folds from the rows' records,
//     filtered and ordered by start time, and Limit keeps the first ones.
//   - ListRunsOrder: if the store implements polyloop.RunLister, the order
//     of the RunLister contract: runs without RunStarted first, then by
//     start time, ties broken by run id compared byte by byte (whatever a
//     database's collation says), and Limit applied after ordering.
//   - ListRunsPages: if the store implements polyloop.RunLister,
//     RunFilter.Descending lists in the exact reverse order (runs without
//     RunStarted last), and RunFilter.After keeps the runs after a position
//     in the order listed: pages of 1, 2 and 3 runs, each cursored by the
//     last position of the one before, list every run once, in order, both
//     ways; a position that is no run's (between two) works alike.
//   - ListRunsTask: if the store implements polyloop.RunLister,
//     RunFilter.TaskContains keeps the runs whose summary's task contains
//     the text: case-sensitive, literal (% and _ are no wildcards), and
//     searching the first polyloop.MaxSummaryTask characters only.
//   - SharedSnapshot: if the store implements polyloop.SnapshotKeeper, two
//     runs of one configuration on different tasks, appended as the Runner
//     appends them, refer to one shared snapshot; ReadRows returns each
//     row with the Shared snapshot it was appended with (not retained:
//     the kit overwrites it once Append returned), ReadRowsFrom returns
//     the run_started row with it in a chunk of one row, and ReadLog and
//     polyloop.StreamLog give each run's records back whole, its own task
//     in its snapshot.
//
// Each failure names the rule of the contract it found broken.
func TestStore(t *testing.T, h StoreHarness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("polylooptest: StoreHarness.New is required")
	}
	runSuite(t, "Store", h, newSettings(h.Timeout, 0, h.Skip), storeChecks)
}

var storeChecks = []check[StoreHarness]{
	{"EmptyLogForUnknownRun", checkStoreEmpty},
	{"RoundTrip", checkStoreRoundTrip},
	{"RangedRead", checkStoreRanged},
	{"RowsNotRetained", checkStoreNotRetained},
	{"SeqRule", checkStoreSeqRule},
	{"BatchAllOrNothing", checkStoreBatch},
	{"InjectedFailure", checkStoreInjectedFailure},
	{"RunsIsolated", checkStoreIsolated},
	{"ConcurrentRuns", checkStoreConcurrentRuns},
	{"ConcurrentWriters", checkStoreConcurrentWriters},
	{"CancelledContext", checkStoreCancelled},
	{"Reopen", checkStoreReopen},
	{"ListRuns", checkStoreListRuns},
	{"ListRunsOrder", checkStoreListOrder},
	{"ListRunsPages", checkStoreListPages},
	{"ListRunsTask", checkStoreListTask},
	{"SharedSnapshot", checkStoreShared},
}

func (h StoreHarness) largeBody() int {
	if h.LargeBody <= 0 {
		return DefaultLargeBody
	}
	return h.LargeBody
}
