// Package sqlitestore is the embedded default polyloop.Store: every run log
// in one SQLite database file, through the pure-Go driver modernc.org/sqlite
// (no cgo).
//
// # Durability
//
// The database runs in WAL mode with synchronous=FULL: every commit syncs
// the write-ahead log before it returns, so when Append returns nil its
// records — and, because a commit is a prefix of the WAL, every earlier
// record of the run — survive a crash or a power loss. synchronous=NORMAL is
// not enough: in WAL mode it skips the sync at commit and syncs only at
// checkpoints, so a power loss may roll back the last transactions that had
// already been reported committed. Append would then have returned nil for
// records that are gone, which breaks prefix-durability (SPEC §3.4): the
// runner may already have started the model call or the action those
// records announced. (A process crash alone loses nothing in either mode;
// the operating system still holds the data.)
//
// A busy timeout (Options.BusyTimeout) makes two processes that share one
// file wait for each other's write lock instead of failing.
//
// # The sequence rule
//
// Records are stored in a table keyed by (run_id, seq). Within the write
// transaction the store checks that an Append's first seq is the run's next
// one, and the primary key would refuse a duplicate even without that check,
// so a second writer — another goroutine, another Store on the same file,
// another process — gets an error satisfying errors.Is(err,
// polyloop.ErrSeqConflict), and nothing of its Append is written.
//
// # Group commit
//
// One goroutine at a time, the leader, uses the write connection: the
// caller of an Append that finds no transaction under way commits it
// itself. Appends from concurrent runs queue up while that transaction is
// being synced; the leader then hands the leadership to the first of them,
// whose caller takes all of them into one transaction with one sync. Each
// Append returns only after the transaction holding its records has
// committed. One run's conflict never fails another run's records: the
// writer checks each Append's first seq against the run's summary before
// writing anything of it (summaries are cached, and the cache is dropped
// whenever SQLite's data_version shows that another connection wrote), and
// if a statement fails unexpectedly the batch is rolled back and written
// again with each Append in its own savepoint, so the failure stays with its
// Append. Stats counts commits and appends, so commits per step can be
// measured.
//
// # Listing
//
// A runs table holds the summary of each run (polyloop.RunSummary, folded
// with (*polyloop.RunSummary).Apply in the transaction of each Append), so
// ListRuns (polyloop.RunLister) never reads a log.
//
// # Schema
//
// The schema is versioned with SQLite's user_version and migrated forward by
// Open. A database written by a newer version of this package is refused
// with ErrSchemaTooNew.
package sqlitestore
