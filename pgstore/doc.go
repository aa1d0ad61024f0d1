// Package pgstore is a polyloop.Store on PostgreSQL, for runs spread over
// several machines. It uses github.com/jackc/pgx/v5 with a connection pool.
//
// # Guarantees
//
// Each Append is in one transaction: its records become visible together
// or not at all, and when it returns nil the commit is durable (with the
// server's default synchronous_commit=on; a server configured with
// synchronous_commit=off gives up prefix-durability on a server crash). Every
// earlier record of the run was committed before, so the log is
// prefix-durable.
//
// The sequence rule is enforced by the database: records are keyed by
// (run_id, seq). The Store caches each run's summary as its last committed
// Append left it; an Append whose first record is the cached next seq is
// sent at once — the inserts and the new summary, one pipelined batch that
// PostgreSQL runs as one implicit transaction: one round trip. A first seq
// below the cached one is a conflict (a run only grows); a run the cache
// does not know (a resumed run) has its summary read first. A second writer
// — in this process or on another machine — that took the same next seq,
// or a cache left behind by another writer, collides on the primary key;
// that Append's writes roll back, it gets an error satisfying
// errors.Is(err, polyloop.ErrSeqConflict), and the cache entry is dropped.
// The translation of PostgreSQL errors into that sentinel happens in one
// place, interpretError (a unique violation, SQLSTATE 23505, is a conflict).
//
// # Group commit
//
// Appends of concurrent runs share transactions: the caller of an Append
// that finds fewer than Options.MaxGroups transactions under way writes
// every queued Append in one batch; Appends arriving meanwhile wait for the
// next. Each Append returns only after the commit of the transaction
// holding it. If the server refuses a statement of a group, the group is
// written again with each Append in its own savepoint, so that one run's
// conflict or failure never fails another run's Append. Stats counts
// commits and appends; a single run makes one commit per Append.
//
// A group holds at most 128 Appends and DefaultMaxBatchBytes of encoded
// records (at least one Append). Its Appends take their row locks in one
// order (by run id and seq), so two Stores racing on the same runs never
// deadlock: the loser fails with polyloop.ErrSeqConflict. A taken Append
// waits for its group's outcome whatever its own context;
// Options.GroupTimeout bounds the group instead. A panic while writing a group fails the
// group's other Appends (outcome unknown) and reaches the leader's caller.
//
// A failure — including a connection lost in the middle of an Append — is
// returned as an error and never retried: the commit may have happened with
// its acknowledgement lost (SPEC §7.4). The runner wraps the error in a
// *polyloop.PersistenceError, writes nothing more for the run, and the next
// Resume reads what the database really holds.
//
// # Listing
//
// A runs table holds each run's summary (polyloop.RunSummary, folded with
// (*polyloop.RunSummary).Apply in the transaction of each Append), so
// ListRuns (polyloop.RunLister) never reads a log.
//
// # Schema
//
// Tables live in one PostgreSQL schema (Options.Schema, default "polyloop"),
// which lets tests and tenants isolate themselves. Open creates the schema
// and migrates it forward, holding an advisory lock so that concurrent Opens
// do not race; a schema written by a newer version of this package is
// refused with ErrSchemaTooNew.
package pgstore
