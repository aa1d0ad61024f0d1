package polylooptest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// BlobStoreHarness tells TestBlobStore how to drive a polyloop.BlobStore
// (where environment snapshots live). Only New is required.
type BlobStoreHarness struct {
	// New returns a store on fresh, empty storage. It is called once or
	// more per subtest, from a goroutine other than the test's.
	New func(t testing.TB) polyloop.BlobStore
	// Reopen closes s and opens the same storage again, as a new process
	// would. Nil: Durable is skipped.
	Reopen func(t testing.TB, s polyloop.BlobStore) polyloop.BlobStore
	// Skip names checks the implementation cannot honour, with the reason.
	Skip map[string]string
	// Timeout is the watchdog of each subtest (DefaultTimeout when zero).
	Timeout time.Duration
}

// The rules of the BlobStore contract.
const (
	ruleBlobReadsBack rule = "Get MUST return the data Put stored, and Refs its references"
	ruleBlobDigest    rule = "Put MUST refuse a blob whose data does not match its digest with ErrBlobDigest, storing nothing of the call"
	ruleBlobNotFound  rule = "Get, Refs and Pin of a blob not held MUST fail with ErrBlobNotFound"
	ruleBlobKeep      rule = "Keep MUST return exactly the digests not held, in order"
	ruleBlobSweep     rule = "Sweep MUST keep every blob a pin reaches and remove the others past the grace period"
	ruleBlobGrace     rule = "Sweep MUST keep a blob stored or kept within the grace period"
	ruleBlobHolders   rule = "pins MUST belong to their holder: Unpin drops only its own, holders differ byte by byte"
	ruleBlobOnce      rule = "a blob stored twice MUST be held once"
	ruleBlobDurable   rule = "blobs and pins MUST survive a reopen"
	ruleBlobCancelled rule = "a call with a done context MUST fail with an error that wraps ctx.Err()"
)

var blobRules = []rule{ruleBlobReadsBack, ruleBlobDigest, ruleBlobNotFound, ruleBlobKeep, ruleBlobSweep,
	ruleBlobGrace, ruleBlobHolders, ruleBlobOnce, ruleBlobDurable, ruleBlobCancelled}

// TestBlobStore checks that the stores made by h honour the BlobStore
// contract. Run it with -race.
//
// The checks (subtest names, usable as keys of h.Skip):
//   - ReadsBack: blobs put in one call read back, with their references.
//   - DigestChecked: a call holding one blob whose data does not match its
//     digest fails with ErrBlobDigest and stores none of its blobs.
//   - NotFound: Get, Refs and Pin of an absent blob fail with
//     ErrBlobNotFound.
//   - Keep: Keep returns the absent digests, in order, and only them.
//   - SweepReachable: a sweep with no grace keeps a pinned manifest and
//     every blob it reaches, transitively, and removes the rest.
//   - SweepGrace: a sweep keeps unpinned blobs younger than its grace, and
//     a blob Keep refreshed.
//   - Holders: holders differing by case, a prefix, '/' or '%' pin apart;
//     a blob two holders pin survives the Unpin of one.
//   - StoredOnce: a blob put twice, and referred to by two manifests, is
//     counted once by Sweep.
//   - Durable: with Reopen, blobs and pins survive.
//   - CancelledContext: each method with a cancelled context fails with an
//     error that wraps context.Canceled.
//   - Concurrent: goroutines putting (again and again), keeping, pinning
//     and reading the same blobs all succeed and read what was put.
func TestBlobStore(t *testing.T, h BlobStoreHarness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("polylooptest: BlobStoreHarness.New is required")
	}
	runSuite(t, "BlobStore", h, h.settings(), blobChecks)
}

func (h BlobStoreHarness) settings() settings { return newSettings(h.Timeout, 0, h.Skip) }

var blobChecks = []check[BlobStoreHarness]{
	{"ReadsBack", ruled(ruleBlobReadsBack, checkBlobReadsBack)},
	{"DigestChecked", ruled(ruleBlobDigest, checkBlobDigest)},
	{"NotFound", ruled(ruleBlobNotFound, checkBlobNotFound)},
	{"Keep", ruled(ruleBlobKeep, checkBlobKeep)},
	{"SweepReachable", ruled(ruleBlobSweep, checkBlobSweep)},
	{"SweepGrace", ruled(ruleBlobGrace, checkBlobGrace)},
	{"Holders", ruled(ruleBlobHolders, checkBlobHolders)},
	{"StoredOnce", ruled(ruleBlobOnce, checkBlobOnce)},
	{"Durable", ruled(ruleBlobDurable, checkBlobDurable)},
	{"CancelledContext", ruled(ruleBlobCancelled, checkBlobCancelled)},
	{"Concurrent", ruled(ruleConcurrentUse, checkBlobConcurrent)},
}

func blob(data string, refs ...polyloop.Blob) polyloop.Blob {
	b := polyloop.Blob{Data: []byte(data), Digest: polyloop.DigestOf([]byte(data))}
	for _, r := range refs {
		b.Refs = append(b.Refs, r.Digest)
	}
	return b
}

// tree is a manifest referring to two chunks, one of which refers to a
// third.
func tree(tag string) (manifest, a, b, c polyloop.Blob) {
	c = blob(tag + " chunk c")
	a = blob(tag+" chunk a", c)
	b = blob(tag + " chunk b")
	manifest = blob(tag+" manifest", a, b)
	return
}

func readsBack(ctx context.Context, s polyloop.BlobStore, blobs ...polyloop.Blob) error {
	for _, b := range blobs {
		got, err := s.Get(ctx, b.Digest)
		if err != nil {
			return fmt.Errorf("Get %s: %w", b.Data, err)
		}
		if string(got) != string(b.Data) {
			return broke(ruleBlobReadsBack, "Get %s returned %q", b.Data, got)
		}
		refs, err := s.Refs(ctx, b.Digest)
		if err != nil {
			return fmt.Errorf("Refs %s: %w", b.Data, err)
		}
		if !slices.Equal(refs, b.Refs) && len(refs)+len(b.Refs) > 0 {
			return broke(ruleBlobReadsBack, "Refs %s = %q, want %q", b.Data, refs, b.Refs)
		}
	}
	return nil
}

func checkBlobReadsBack(e *env, h BlobStoreHarness) error {
	s := h.New(e.t)
	m, a, b, c := tree("rb")
	empty := blob("")
	if err := s.Put(e.ctx, c, a, b, m, empty); err != nil {
		return fmt.Errorf("Put: %w", err)
	}
	return readsBack(e.ctx, s, m, a, b, c, empty)
}

func checkBlobDigest(e *env, h BlobStoreHarness) error {
	s := h.New(e.t)
	good := blob("good")
	bad := blob("bad")
	bad.Data = []byte("not bad")
	err := s.Put(e.ctx, good, bad)
	if !errors.Is(err, polyloop.ErrBlobDigest) {
		return fmt.Errorf("Put of a blob whose data does not match its digest: %v, want ErrBlobDigest", err)
	}
	missing, err := s.Keep(e.ctx, []string{good.Digest, bad.Digest})
	if err != nil {
		return fmt.Errorf("Keep: %w", err)
	}
	if len(missing) != 2 {
		return fmt.Errorf("a refused Put stored part of its call: missing after it %q", missing)
	}
	return nil
}

func checkBlobNotFound(e *env, h BlobStoreHarness) error {
	s := h.New(e.t)
	absent := blob("absent").Digest
	if _, err := s.Get(e.ctx, absent); !errors.Is(err, polyloop.ErrBlobNotFound) {
		return fmt.Errorf("Get of an absent blob: %v", err)
	}
	if _, err := s.Refs(e.ctx, absent); !errors.Is(err, polyloop.ErrBlobNotFound) {
		return fmt.Errorf("Refs of an absent blob: %v", err)
	}
	if err := s.Pin(e.ctx, "run-nf", absent); !errors.Is(err, polyloop.ErrBlobNotFound) {
		return fmt.Errorf("Pin of an absent blob: %v", err)
	}
	return nil
}

func checkBlobKeep(e *env, h BlobStoreHarness) error {
	s := h.New(e.t)
	x, y, z := blob("keep x"), blob("keep y"), blob("keep z")
	if err := s.Put(e.ctx, y); err != nil {
		return err
	}
	missing, err := s.Keep(e.ctx, []string{z.Digest, y.Digest, x.Digest})
	if err != nil {
		return err
	}
	if want := []string{z.Digest, x.Digest}; !slices.Equal(missing, want) {
		return fmt.Errorf("Keep = %q, want %q", missing, want)
	}
	return nil
}

// sweep sweeps with grace and returns which of blobs are still held.
func sweep(e *env, s polyloop.BlobStore, grace time.Duration, blobs ...polyloop.Blob) ([]bool, error) {
	if _, err := s.Sweep(e.ctx, grace); err != nil {
		return nil, fmt.Errorf("Sweep: %w", err)
	}
	held := make([]bool, len(blobs))
	for i, b := range blobs {
		_, err := s.Get(e.ctx, b.Digest)
		switch {
		case err == nil:
			held[i] = true
		case !errors.Is(err, polyloop.ErrBlobNotFound):
			return nil, fmt.Errorf("Get after a sweep: %w", err)
		}
	}
	return held, nil
}

func checkBlobSweep(e *env, h BlobStoreHarness) error {
	s := h.New(e.t)
	m, a, b, c := tree("sw")
	lone := blob("sw unpinned")
	m2, a2, b2, c2 := tree("sw2")
	if err := s.Put(e.ctx, c, a, b, m, lone, c2, a2, b2, m2); err != nil {
		return err
	}
	if err := s.Pin(e.ctx, "run-sw", m.Digest); err != nil {
		return err
	}
	held, err := sweep(e, s, 0, m, a, b, c, lone, m2, a2, b2, c2)
	if err != nil {
		return err
	}
	if want := []bool{true, true, true, true, false, false, false, false, false}; !slices.Equal(held, want) {
		return fmt.Errorf("after a sweep with no grace, held = %v (manifest, chunks a b c, an unpinned blob, an unpinned tree), want %v", held, want)
	}
	if err := s.Unpin(e.ctx, "run-sw"); err != nil {
		return err
	}
	held, err = sweep(e, s, 0, m, a, b, c)
	if err != nil {
		return err
	}
	if slices.Contains(held, true) {
		return fmt.Errorf("after Unpin, a sweep kept %v of the tree", held)
	}
	return nil
}

func checkBlobGrace(e *env, h BlobStoreHarness) error {
	s := h.New(e.t)
	young := blob("grace young")
	if err := s.Put(e.ctx, young); err != nil {
		return err
	}
	held, err := sweep(e, s, time.Hour, young)
	if err != nil {
		return err
	}
	if !held[0] {
		return errors.New("a sweep with an hour's grace removed an unpinned blob stored just now")
	}
	old, kept := blob("grace old"), blob("grace kept")
	if err := s.Put(e.ctx, old, kept); err != nil {
		return err
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := s.Keep(e.ctx, []string{kept.Digest}); err != nil {
		return err
	}
	held, err = sweep(e, s, 200*time.Millisecond, old, kept)
	if err != nil {
		return err
	}
	if !held[1] {
		return errors.New("a sweep removed a blob that Keep refreshed within its grace")
	}
	if held[0] {
		return broke(ruleBlobSweep, "a sweep kept an unpinned blob older than its grace")
	}
	return nil
}

func checkBlobHolders(e *env, h BlobStoreHarness) error {
	s := h.New(e.t)
	holders := []string{"run", "RUN", "run/1", "run%2F1", "ru", "run\u00e9"}
	var blobs []polyloop.Blob
	for _, hd := range holders {
		b := blob("holder " + hd)
		blobs = append(blobs, b)
		if err := s.Put(e.ctx, b); err != nil {
			return err
		}
		if err := s.Pin(e.ctx, hd, b.Digest); err != nil {
			return err
		}
	}
	shared := blob("holder shared")
	if err := s.Put(e.ctx, shared); err != nil {
		return err
	}
	for _, hd := range []string{"run", "fork"} {
		if err := s.Pin(e.ctx, hd, shared.Digest); err != nil {
			return err
		}
	}
	if err := s.Unpin(e.ctx, "run"); err != nil {
		return err
	}
	held, err := sweep(e, s, 0, append(blobs, shared)...)
	if err != nil {
		return err
	}
	want := []bool{false, true, true, true, true, true, true}
	if !slices.Equal(held, want) {
		return fmt.Errorf("after Unpin(%q), held = %v for holders %q and a blob shared with \"fork\", want %v", "run", held, holders, want)
	}
	if err := s.Unpin(e.ctx, "run"); err != nil {
		return fmt.Errorf("Unpin twice: %w", err)
	}
	return nil
}

func checkBlobOnce(e *env, h BlobStoreHarness) error {
	s := h.New(e.t)
	chunk := blob("once chunk")
	m1, m2 := blob("once manifest 1", chunk), blob("once manifest 2", chunk)
	for _, call := range [][]polyloop.Blob{{chunk, m1}, {chunk, m2}, {chunk}} {
		if err := s.Put(e.ctx, call...); err != nil {
			return err
		}
	}
	for i, m := range []polyloop.Blob{m1, m2} {
		if err := s.Pin(e.ctx, fmt.Sprint("once-", i), m.Digest); err != nil {
			return err
		}
	}
	res, err := s.Sweep(e.ctx, 0)
	if err != nil {
		return err
	}
	want := len(chunk.Data) + len(m1.Data) + len(m2.Data)
	if res.Kept != 3 || res.KeptBytes != int64(want) || res.Removed != 0 {
		return fmt.Errorf("three distinct blobs, one put three times: sweep says %+v, want 3 kept, %d bytes", res, want)
	}
	return nil
}

func checkBlobDurable(e *env, h BlobStoreHarness) error {
	if h.Reopen == nil {
		return skipf("the harness has no Reopen")
	}
	s := h.New(e.t)
	m, a, b, c := tree("dur")
	if err := s.Put(e.ctx, c, a, b, m); err != nil {
		return err
	}
	if err := s.Pin(e.ctx, "run-dur", m.Digest); err != nil {
		return err
	}
	s = h.Reopen(e.t, s)
	if err := readsBack(e.ctx, s, m, a, b, c); err != nil {
		return err
	}
	held, err := sweep(e, s, 0, m, a, b, c)
	if err != nil {
		return err
	}
	if slices.Contains(held, false) {
		return fmt.Errorf("after a reopen the pin is gone: a sweep kept %v of the pinned tree", held)
	}
	return nil
}

func checkBlobCancelled(e *env, h BlobStoreHarness) error {
	s := h.New(e.t)
	held := blob("cancel held")
	if err := s.Put(e.ctx, held); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	fresh := blob("cancel fresh")
	calls := map[string]func() error{
		"Put":   func() error { return s.Put(ctx, fresh) },
		"Get":   func() error { _, err := s.Get(ctx, held.Digest); return err },
		"Refs":  func() error { _, err := s.Refs(ctx, held.Digest); return err },
		"Keep":  func() error { _, err := s.Keep(ctx, []string{held.Digest}); return err },
		"Pin":   func() error { return s.Pin(ctx, "run-c", held.Digest) },
		"Unpin": func() error { return s.Unpin(ctx, "run-c") },
		"Sweep": func() error { _, err := s.Sweep(ctx, 0); return err },
	}
	for _, name := range []string{"Put", "Get", "Refs", "Keep", "Pin", "Unpin", "Sweep"} {
		if err := calls[name](); !errors.Is(err, context.Canceled) {
			return fmt.Errorf("%s with a cancelled context: %v, want an error that wraps context.Canceled", name, err)
		}
	}
	return readsBack(e.ctx, s, held)
}

func checkBlobConcurrent(e *env, h BlobStoreHarness) error {
	s := h.New(e.t)
	const workers = 8
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, a, b, c := tree(fmt.Sprint("conc ", w%3))
			var err error
			for round := 0; round < 4 && err == nil; round++ {
				err = s.Put(e.ctx, c, a, b, m)
				if err == nil {
					_, err = s.Keep(e.ctx, []string{m.Digest, a.Digest})
				}
				if err == nil {
					err = s.Pin(e.ctx, fmt.Sprint("run-", w), m.Digest)
				}
				if err == nil {
					err = readsBack(e.ctx, s, m, a, b, c)
				}
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
