package polylooptest

import (
	"testing"
	"time"
)

// MemoryStoreHarness tells TestMemoryStore how to drive a MemoryStore (the
// memory ports of a store: memory.Store and memory.ViewStore). Only New is
// required; a check that needs a missing field is skipped with the reason
// logged.
type MemoryStoreHarness struct {
	// New returns a fresh, empty store, once or more per subtest, from a
	// goroutine other than the test's: use t.TempDir and t.Cleanup.
	New func(t testing.TB) MemoryStore
	// Reopen closes s and opens the same storage again, as a restarted
	// process would. Nil: the Reopen check is skipped.
	Reopen func(t testing.TB, s MemoryStore) MemoryStore
	// Skip names checks the implementation cannot honour, with the reason
	// logged when each is skipped. A name that is no check fails the suite.
	Skip map[string]string
	// Timeout is the watchdog of each subtest (DefaultTimeout when zero).
	Timeout time.Duration
}

func (h MemoryStoreHarness) settings() settings { return newSettings(h.Timeout, 0, h.Skip) }

// TestMemoryStore checks that the stores made by h honour the contracts of
// memory.Store and memory.ViewStore. Run it with -race.
//
// The checks (subtest names, usable as keys of h.Skip):
//   - Empty: an empty store loads no entries, no history, no write, and
//     views at version 0, all without error.
//   - RoundTrip: values (unicode, nesting, large) and provenance read back
//     byte for byte; a commit lists its versions in the write's order.
//   - Versions: versions count per entry from 1 and are never reused; a
//     delete is a tombstone kept in the history, not loaded as live; a put
//     after it takes the next version.
//   - Heads: EntryHeads gives each entry's last version — a tombstone
//     included, with its version — once, and nothing for an entry never
//     written or of another namespace or case.
//   - BasisMismatch: a stale basis — on an entry written, on an entry only
//     read, or an entry expected absent that is live — fails with
//     memory.ErrBasisMismatch and writes nothing of the batch.
//   - Idempotent: a write id committed returns its commit again (Replayed,
//     with its digest) and writes nothing, whatever the basis says now;
//     the same id with other operations is memory.ErrWriteIDReused;
//     LookupWrite finds it.
//   - NamespacesIsolated: namespaces and keys differing by case, by a
//     prefix or by SQL wildcards are separate.
//   - ConcurrentWriters: writers racing on one entry from one basis:
//     exactly one commits, the others get memory.ErrBasisMismatch.
//   - ConcurrentKeys: concurrent writers of different entries all commit.
//   - ViewVersions: a view's versions are made by compare-and-set from
//     their basis and are immutable; an unknown version is
//     memory.ErrNoVersion.
//   - ViewIdempotent: a view write id committed returns its version again
//     and writes nothing; other content under it is ErrWriteIDReused.
//   - ViewConcurrent: view writers racing from one basis: exactly one
//     commits.
//   - CancelledContext: a call with a cancelled context works or fails with
//     an error that errors.Is context.Canceled, writes all or nothing, and
//     leaves the store usable.
//   - Reopen: with Reopen, entries, histories, write ids and views survive
//     a restart.
func TestMemoryStore(t *testing.T, h MemoryStoreHarness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("polylooptest: MemoryStoreHarness.New is required")
	}
	runSuite(t, "MemoryStore", h, h.settings(), memoryChecks)
}

var memoryChecks = []check[MemoryStoreHarness]{
	{"Empty", ruled(ruleMemEmpty, checkMemEmpty)},
	{"RoundTrip", ruled(ruleMemRoundTrip, checkMemRoundTrip)},
	{"Versions", ruled(ruleMemVersions, checkMemVersions)},
	{"Heads", ruled(ruleMemHeads, checkMemHeads)},
	{"BasisMismatch", ruled(ruleMemBasis, checkMemBasisMismatch)},
	{"Idempotent", ruled(ruleMemIdempotent, checkMemIdempotent)},
	{"NamespacesIsolated", ruled(ruleMemIsolated, checkMemIsolated)},
	{"ConcurrentWriters", ruled(ruleMemOneWriterWins, checkMemConcurrentWriters)},
	{"ConcurrentKeys", ruled(ruleMemConcurrentKeys, checkMemConcurrentKeys)},
	{"ViewVersions", ruled(ruleViewVersions, checkViewVersions)},
	{"ViewIdempotent", ruled(ruleViewIdempotent, checkViewIdempotent)},
	{"ViewConcurrent", ruled(ruleViewOneWriterWins, checkViewConcurrent)},
	{"CancelledContext", ruled(ruleMemCancelled, checkMemCancelled)},
	{"Reopen", ruled(ruleMemDurable, checkMemReopen)},
}
