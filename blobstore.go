package polyloop

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// BlobStore is where environment snapshots live: content-addressed blobs,
// so that a file or a chunk that many snapshots (of one run's steps, of
// many runs) hold is stored once, reachable wherever the run can be resumed
// (a directory beside the run store or shared by several machines, a
// PostgreSQL database). Snapshots are made of blobs: file chunks, and a
// manifest that refers to them (package envsnap).
//
// Contract:
//   - Put stores blobs under their digests ("sha256:" and the hex SHA-256
//     of Data). It MUST verify each digest and refuse a blob whose data
//     does not match with ErrBlobDigest, storing nothing of that call. A
//     blob already held is not stored twice. A blob's Refs are determined
//     by its data (a manifest names its chunks), so a store keeps the Refs
//     it was first given. When Put returns
//     nil, every blob of the call is durable: it survives a crash or power
//     loss of this process and of the machine.
//   - Get returns a blob's data; a blob the store does not hold is
//     ErrBlobNotFound. Refs returns the digests a blob refers to.
//   - Keep reports which of the digests the store does not hold (in the
//     order given) and marks the ones it holds as just used, so that a
//     sweep running meanwhile keeps them for its grace period: a writer
//     that calls Keep, then Put for what is missing, then Pin, never loses
//     a blob to a sweep whose grace is longer than that sequence.
//   - Pin makes a blob a root held by holder (a run id): the blob and every
//     blob it refers to, transitively, survive every sweep until holder
//     lets go (Unpin). A blob may be pinned by many holders (a run and
//     its forks); pinning a blob the store does not hold is
//     ErrBlobNotFound. Pins are durable like blobs.
//   - Unpin drops every pin of holder; it is idempotent.
//   - Sweep removes every blob that no pinned blob reaches and that was
//     neither stored nor kept (Keep, Put) within the grace period; it
//     returns what it removed and kept. Holders are told apart byte by
//     byte (case, prefixes, '/' and '%' matter).
//   - Failures: any other failure is returned as a non-nil error; an error
//     from Put or Pin leaves the store as if the call had not happened, or
//     had wholly happened.
//   - Cancellation: a done ctx makes a call fail with an error that wraps
//     ctx.Err(), leaving the store usable.
//   - Ownership: the store does not retain the caller's slices; data it
//     returns belongs to the caller.
//   - Concurrency: a BlobStore is safe for concurrent use, by goroutines
//     and — for stores on shared storage — by processes on several hosts.
type BlobStore interface {
	Put(ctx context.Context, blobs ...Blob) error
	Get(ctx context.Context, digest string) ([]byte, error)
	Refs(ctx context.Context, digest string) ([]string, error)
	Keep(ctx context.Context, digests []string) (missing []string, err error)
	Pin(ctx context.Context, holder, digest string) error
	Unpin(ctx context.Context, holder string) error
	Sweep(ctx context.Context, grace time.Duration) (SweepResult, error)
}

// PinHolders is the optional listing interface of a BlobStore: Holders
// returns every holder that has at least one pin, in no particular order.
// The CLI's `polyloop env prune --snapshots` uses it to let go the pins of
// runs whose logs are gone (snapshotstore's stores implement it).
type PinHolders interface {
	Holders(ctx context.Context) ([]string, error)
}

// Blob is one content-addressed blob.
type Blob struct {
	// Digest is DigestOf(Data).
	Digest string
	Data   []byte
	// Refs are the digests of the blobs this one refers to (a manifest's
	// chunks): they are kept while this one is reachable.
	Refs []string
}

// SweepResult is what a sweep did.
type SweepResult struct {
	// Removed and RemovedBytes count the blobs removed; Kept and
	// KeptBytes the blobs still held.
	Removed      int   `json:"removed"`
	RemovedBytes int64 `json:"removed_bytes"`
	Kept         int   `json:"kept"`
	KeptBytes    int64 `json:"kept_bytes"`
}

// Errors of the BlobStore contract.
var (
	ErrBlobNotFound = errors.New("polyloop: blob not found")
	ErrBlobDigest   = errors.New("polyloop: blob data does not match its digest")
)

// DefaultSweepGrace is the grace period of a sweep that names none: longer
// than any snapshot takes to write.
const DefaultSweepGrace = time.Hour

// Check verifies a blob before it is stored: its digest is a "sha256:"
// digest, that of its data, and its references are digests. Every store
// calls it (ErrBlobDigest, ErrEnvInvalid), so none verifies differently.
func (b Blob) Check() error {
	if !IsDigest(b.Digest) {
		return fmt.Errorf("%w: %q is not a sha256 digest", ErrBlobDigest, b.Digest)
	}
	if got := DigestOf(b.Data); got != b.Digest {
		return fmt.Errorf("%w: %s holds data of digest %s", ErrBlobDigest, b.Digest, got)
	}
	for _, r := range b.Refs {
		if !IsDigest(r) {
			return fmt.Errorf("%w: blob %s refers to %q, not a sha256 digest", ErrBlobDigest, b.Digest, r)
		}
	}
	return nil
}
