package memoryport

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
)

// Store is the persistence port of Memory: the authoritative store of
// entries. memstore, sqlitestore and pgstore implement it beside the run
// logs; polylooptest.TestMemoryStore checks an implementation.
//
// Contract:
//   - LoadEntries returns the live entries of the namespaces (in any
//     order); an unknown namespace has none, and that is not an error.
//   - CommitWrite commits the write atomically — every operation or none,
//     even if the process dies in the middle — if and only if its basis
//     matches the live state: for every entry the basis lists and every
//     entry an operation touches (expected absent when the basis does not
//     list it), the live version is the expected one (0: no live entry).
//     The check and the write MUST be one atomic compare-and-set inside the
//     store: of writers racing from one basis exactly one commits. A
//     mismatch fails with an error for which errors.Is(err,
//     ErrBasisMismatch) holds, and writes nothing. Each operation gives its
//     entry the next version after the entry's last one, a tombstone
//     included; a delete writes a tombstone. The returned Commit lists the
//     versions in the write's order.
//   - CommitWrite is idempotent by write id: a write id already committed
//     returns that commit's result (Replayed set) and writes nothing,
//     whatever the basis says now; the same id with other operations
//     (WriteDigest differs) fails with ErrWriteIDReused. A write without
//     operations is never passed in.
//   - LookupWrite returns the commit of a write id, if committed, with the
//     Digest kept for it; a replayed CommitWrite returns the Digest too.
//   - EntryHeads returns the last version of each entry asked for that has
//     one — a tombstone included (Deleted, no value) — in any order, each
//     once; an entry never written is left out. The ids asked for are
//     distinct. Memory's pre-commit check reads them, so that a basis
//     stale against the store, not only against its own copy, is a
//     conflict found before the commit.
//   - EntryHistory returns every version of an entry, tombstones included,
//     oldest first (none for an unknown entry).
//   - Namespaces lists the namespaces that hold entries, sorted.
//   - Errors: any other failure is an error; Memory marks it a
//     *polyloop.PersistenceError (an implementation may return one itself;
//     its identity is kept). After a failed CommitWrite the outcome is
//     unknown: the write may have been committed and its acknowledgement
//     lost.
//   - Cancellation: a done ctx may make a call fail with an error wrapping
//     ctx.Err(); a CommitWrite that fails that way is still atomic.
//   - Ownership: the callee does not keep slices it is passed; what it
//     returns becomes the caller's.
//   - Concurrency: safe for concurrent use, by any number of processes on
//     one store.
type Store interface {
	LoadEntries(ctx context.Context, namespaces []string) ([]Entry, error)
	CommitWrite(ctx context.Context, w Write) (Commit, error)
	LookupWrite(ctx context.Context, writeID string) (Commit, bool, error)
	EntryHeads(ctx context.Context, ids []EntryID) ([]Entry, error)
	EntryHistory(ctx context.Context, namespace, key string) ([]Entry, error)
	Namespaces(ctx context.Context) ([]string, error)
}

// ViewStore is the persistence port of View, with the same rules as Store.
//
// Contract:
//   - LoadView returns the view's last version; a view never adjusted is
//     version 0 (no members), and that is not an error.
//   - CommitView commits w.Next as version w.Basis+1 if and only if the
//     view's last version is w.Basis, atomically (compare-and-set inside
//     the store: of writers racing from one basis exactly one commits); a
//     mismatch fails with ErrBasisMismatch and writes nothing. It is
//     idempotent by write id: an id already committed returns that version
//     (Replayed set) and writes nothing; the same id with another content
//     (ViewWriteDigest differs) fails with ErrWriteIDReused.
//   - Versions are immutable: ViewAt returns a version exactly as it was
//     committed, always; a version never made fails with ErrNoVersion.
//   - LookupViewWrite returns the version a write id committed, if any.
//   - Views lists the views that have versions, sorted.
//   - Errors, cancellation, ownership and concurrency: as for Store.
type ViewStore interface {
	LoadView(ctx context.Context, name string) (ViewVersion, error)
	CommitView(ctx context.Context, w ViewWrite) (ViewVersion, error)
	LookupViewWrite(ctx context.Context, writeID string) (ViewVersion, bool, error)
	ViewAt(ctx context.Context, name string, version int64) (ViewVersion, error)
	Views(ctx context.Context) ([]string, error)
}

// Errors of the ports. Test for them with errors.Is.
var (
	// ErrBasisMismatch: the store's compare-and-set refused a write whose
	// basis no longer matches. Memory and View report it as a
	// *polyloop.PersistenceError: a refusal inside the port is the port's
	// failure, never a conflict business may receive (design record 0020).
	ErrBasisMismatch = errors.New("memory: the store refused the write: its basis does not match")
	// ErrWriteIDReused: a write id already committed with other contents.
	ErrWriteIDReused = errors.New("memory: the write id was committed with other contents")
	// ErrNoVersion: ViewAt of a version never made.
	ErrNoVersion = errors.New("memory: no such view version")
	// ErrPortContract marks what a port returned that breaks its contract
	// (a commit that does not answer the write). Memory and View report it
	// as a *polyloop.PersistenceError.
	ErrPortContract = errors.New("memory: the store broke its contract")
)

// WriteDigest is the digest stores keep with a committed write id: it
// covers the operations, not the basis (a write re-issued after a reload
// may carry a newer basis and is still the same write).
func WriteDigest(w Write) string {
	b, _ := json.Marshal(w.Ops) // decoded JSON values always encode
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// ViewWriteDigest is the digest stores keep with a committed view write id:
// the view, its sources and its members' ids and versions.
func ViewWriteDigest(w ViewWrite) string {
	refs := make([]EntryVersion, len(w.Next.Members))
	for i, m := range w.Next.Members {
		refs[i] = EntryVersion{Namespace: m.Namespace, Key: m.Key, Version: m.Version}
	}
	b, _ := json.Marshal(struct {
		View    string         `json:"view"`
		Sources []string       `json:"sources"`
		Members []EntryVersion `json:"members"`
	}{w.Next.View, w.Next.Sources, refs})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
