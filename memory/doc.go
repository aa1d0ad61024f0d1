// Package memory is what an agent remembers, with the failure semantics of
// the project's third seed (design records 0020 and 0021).
//
// Entries live in namespaces: a key, a JSON value, a version per entry
// (1, 2, …, never reused: a delete is a tombstone version) and the
// provenance of each version (the run, step and call that wrote it, and the
// write's id). Three entities use them:
//
//   - Memory installs the entries of its namespaces from a Store and writes
//     them with Apply(ctx, Write): a batch of operations made from a Basis
//     (the versions the proposal was made from), committed all or nothing.
//   - View is the curated set of entries the model is shown (a
//     polyloop.ContextView): each Adjust makes a new immutable version,
//     which every model-call intent names.
//   - Maintainer runs after each step (a polyloop.Maintainer): a proposal by
//     a child agent, then Memory.Apply, then the View's adjustment, each
//     recorded in the run's log (polyloop.InvokeChild, polyloop.Perform).
//
// memorytools.Register gives an agent remember, recall and forget (package
// memorytools, so that this package does not link funcexec).
//
// # Failures
//
// Each failure keeps its meaning:
//
//   - *InvalidWriteError: the input is wrong (an ordinary error).
//   - *ConflictError, *RejectionError: the entity's own check before the
//     commit refused a stale basis, a foreign source, a missing member: a
//     failure business may receive (IsReceivable). The basis is never
//     swapped: a new proposal needs a new basis, explicitly.
//   - *polyloop.PersistenceError: the port failed, or broke its contract —
//     a compare-and-set refused inside the store (ErrBasisMismatch)
//     included. The commit may have happened. Nothing is installed, nothing
//     retried; the entity refuses writes and current queries
//     (*ReloadRequiredError) until Reload, after which it holds the store's
//     truth.
//   - *polyloop.PublicationError: the commit stands and is installed; the
//     publication it requires failed. Nothing is written again.
//
// Writes are idempotent by write id: a write issued again after a crash —
// by a resumed maintenance, by a replayed tool action — finds its own
// commit instead of committing twice.
//
// # Stores
//
// The ports, Store and ViewStore, are implemented beside the run logs by
// memstore, sqlitestore and pgstore, and checked by
// polylooptest.TestMemoryStore; polylooptest.FaultyMemoryStore injects
// their failures.
package memory
