package polylooptest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/snapshotstore"
)

// blobFaults are the ways faultyBlobs breaks the BlobStore contract.
type blobFaults struct {
	noVerify     bool // Put stores data under any digest
	partial      bool // a refused Put keeps the blobs before the bad one
	wrongData    bool // Get returns the data with its last byte cut
	dropRefs     bool // Refs returns nothing
	nilNotFound  bool // Get of an absent blob returns nil, nil
	keepAll      bool // Keep reports nothing missing
	rootsOnly    bool // Sweep marks the pins but not what they refer to
	noGrace      bool // Sweep ignores the grace period
	keepNoTouch  bool // Keep does not refresh
	foldCase     bool // holders are case-insensitive
	unpinAll     bool // Unpin drops every holder's pins
	doubleCount  bool // a blob put twice is counted twice
	amnesia      bool // Reopen gives an empty store
	ignoreCancel bool // a cancelled context is not honoured
	racy         bool // Put is not atomic against a concurrent Get
}

type faultyBlobs struct {
	blobFaults
	*snapshotstore.Memory
	mu     sync.Mutex
	twice  map[string]int
	hidden map[string]int // racy: blobs being "rewritten"
	refs   sync.Map       // rootsOnly: the references kept aside
}

func newFaultyBlobs(f blobFaults) *faultyBlobs {
	return &faultyBlobs{blobFaults: f, Memory: snapshotstore.NewMemory(), twice: map[string]int{}, hidden: map[string]int{}}
}

func (f *faultyBlobs) ctx(ctx context.Context) context.Context {
	if f.ignoreCancel {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

func (f *faultyBlobs) holder(h string) string {
	if f.foldCase {
		return strings.ToLower(h)
	}
	return h
}

func (f *faultyBlobs) Put(ctx context.Context, blobs ...polyloop.Blob) error {
	ctx = f.ctx(ctx)
	if f.racy { // a held blob is rewritten in place: for a moment it is not there
		var held []string
		for _, b := range blobs {
			if _, err := f.Memory.Get(ctx, b.Digest); err == nil {
				held = append(held, b.Digest)
			}
		}
		f.mu.Lock()
		for _, d := range held {
			f.hidden[d]++
		}
		f.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		defer func() {
			f.mu.Lock()
			for _, d := range held {
				f.hidden[d]--
			}
			f.mu.Unlock()
		}()
	}
	for i, b := range blobs {
		if f.noVerify && b.Check() != nil {
			b.Digest = polyloop.DigestOf(b.Data)
			blobs[i] = b
		}
		if f.partial && b.Check() != nil {
			if err := f.Memory.Put(ctx, blobs[:i]...); err != nil {
				return err
			}
		}
	}
	f.mu.Lock()
	for _, b := range blobs {
		f.twice[b.Digest]++
	}
	f.mu.Unlock()
	return f.Memory.Put(ctx, blobs...)
}

func (f *faultyBlobs) Get(ctx context.Context, digest string) ([]byte, error) {
	f.mu.Lock()
	hidden := f.hidden[digest] > 0
	f.mu.Unlock()
	if hidden {
		return nil, fmt.Errorf("%w: %s (being rewritten)", polyloop.ErrBlobNotFound, digest)
	}
	data, err := f.Memory.Get(f.ctx(ctx), digest)
	switch {
	case err != nil && f.nilNotFound:
		return nil, nil
	case err == nil && f.wrongData && len(data) > 0:
		return data[:len(data)-1], nil
	}
	return data, err
}

func (f *faultyBlobs) Refs(ctx context.Context, digest string) ([]string, error) {
	refs, err := f.Memory.Refs(f.ctx(ctx), digest)
	if f.dropRefs {
		return nil, err
	}
	return refs, err
}

func (f *faultyBlobs) Keep(ctx context.Context, digests []string) ([]string, error) {
	if f.keepAll {
		return nil, nil
	}
	if f.keepNoTouch {
		var missing []string
		for _, d := range digests {
			if _, err := f.Memory.Get(ctx, d); err != nil {
				missing = append(missing, d)
			}
		}
		return missing, nil
	}
	return f.Memory.Keep(f.ctx(ctx), digests)
}

func (f *faultyBlobs) Pin(ctx context.Context, holder, digest string) error {
	return f.Memory.Pin(f.ctx(ctx), f.holder(holder), digest)
}

func (f *faultyBlobs) Unpin(ctx context.Context, holder string) error {
	if f.unpinAll {
		for _, h := range []string{"run", "RUN", "run/1", "run%2F1", "ru", "run\u00e9", "fork"} {
			if err := f.Memory.Unpin(ctx, h); err != nil {
				return err
			}
		}
	}
	return f.Memory.Unpin(f.ctx(ctx), f.holder(holder))
}

func (f *faultyBlobs) Sweep(ctx context.Context, grace time.Duration) (polyloop.SweepResult, error) {
	ctx = f.ctx(ctx)
	if f.noGrace {
		grace = 0
	}
	res, err := f.Memory.Sweep(ctx, grace)
	if f.doubleCount {
		f.mu.Lock()
		for d, n := range f.twice {
			if n > 1 {
				data, gerr := f.Memory.Get(ctx, d)
				if gerr == nil {
					res.Kept += n - 1
					res.KeptBytes += int64((n - 1) * len(data))
				}
			}
		}
		f.mu.Unlock()
	}
	return res, err
}

func blobHarnessWith(f blobFaults) BlobStoreHarness {
	return BlobStoreHarness{
		New: func(t testing.TB) polyloop.BlobStore {
			s := newFaultyBlobs(f)
			if f.rootsOnly {
				// Store the blobs without their references: a sweep then marks the pins alone.
				return &refless{s}
			}
			return s
		},
		Reopen: func(t testing.TB, s polyloop.BlobStore) polyloop.BlobStore {
			if f.amnesia {
				return newFaultyBlobs(f)
			}
			return s
		},
	}
}

// refless stores blobs without their references but reports them.
type refless struct{ *faultyBlobs }

func (r *refless) Put(ctx context.Context, blobs ...polyloop.Blob) error {
	for _, b := range blobs {
		if err := r.faultyBlobs.Put(ctx, polyloop.Blob{Digest: b.Digest, Data: b.Data}); err != nil {
			return err
		}
		r.refs.Store(b.Digest, b.Refs)
	}
	return nil
}

func (r *refless) Refs(ctx context.Context, digest string) ([]string, error) {
	if _, err := r.Memory.Refs(ctx, digest); err != nil {
		return nil, err
	}
	v, _ := r.refs.Load(digest)
	refs, _ := v.([]string)
	return refs, nil
}

func brokenBlobCases() []brokenCase {
	c := func(check string, r rule, f blobFaults) brokenCase {
		h := blobHarnessWith(f)
		return brokenCase{"BlobStore", check, r, func(t *testing.T) outcome { return runNamed(t, blobChecks, check, h, h.settings()) }}
	}
	return []brokenCase{
		c("ReadsBack", ruleBlobReadsBack, blobFaults{wrongData: true}),
		c("ReadsBack", ruleBlobReadsBack, blobFaults{dropRefs: true}),
		c("DigestChecked", ruleBlobDigest, blobFaults{noVerify: true}),
		c("DigestChecked", ruleBlobDigest, blobFaults{partial: true}),
		c("NotFound", ruleBlobNotFound, blobFaults{nilNotFound: true}),
		c("Keep", ruleBlobKeep, blobFaults{keepAll: true}),
		c("SweepReachable", ruleBlobSweep, blobFaults{rootsOnly: true}),
		c("SweepGrace", ruleBlobGrace, blobFaults{noGrace: true}),
		c("SweepGrace", ruleBlobGrace, blobFaults{keepNoTouch: true}),
		c("Holders", ruleBlobHolders, blobFaults{foldCase: true}),
		c("Holders", ruleBlobHolders, blobFaults{unpinAll: true}),
		c("StoredOnce", ruleBlobOnce, blobFaults{doubleCount: true}),
		c("Durable", ruleBlobDurable, blobFaults{amnesia: true}),
		c("CancelledContext", ruleBlobCancelled, blobFaults{ignoreCancel: true}),
		c("Concurrent", ruleConcurrentUse, blobFaults{racy: true}),
	}
}
