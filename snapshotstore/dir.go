package snapshotstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/polyloop/polyloop"
)

// Dir is a BlobStore in a directory:
//
//	blobs/sha256/<2 hex>/<62 hex>        a blob's data
//	blobs/sha256/<2 hex>/<62 hex>.refs   its references, one per line
//	pins/<hex of holder>/<64 hex>        a pin (an empty file)
//
// A blob is written to a temporary file, synced, renamed into place and
// its directory synced, so that a blob that is visible is whole and
// durable; its .refs file lands with it (a reader of a blob without one
// that should have one cannot exist: both are synced before either is
// renamed). A blob's modification time is
// when it was last stored or kept (the grace clock of Sweep). Several
// processes, on one machine or on several mounting the directory, may use
// it at once: every write is a rename of a complete file.
type Dir struct {
	root string
}

// OpenDir opens (creating it if needed) a store in dir.
func OpenDir(dir string) (*Dir, error) {
	for _, sub := range []string{"blobs/sha256", "pins"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("snapshotstore: %w", err)
		}
	}
	return &Dir{root: dir}, nil
}

// Path is the store's directory.
func (d *Dir) Path() string { return d.root }

func (d *Dir) blobPath(digest string) (string, error) {
	if !polyloop.IsDigest(digest) {
		return "", fmt.Errorf("%w: %q", polyloop.ErrBlobNotFound, digest)
	}
	h := strings.TrimPrefix(digest, "sha256:")
	return filepath.Join(d.root, "blobs", "sha256", h[:2], h[2:]), nil
}

// Put writes every blob not yet held, then syncs: all are durable when it
// returns. Blobs already held are touched. The files of one call are
// written first and synced together (concurrently), then renamed into
// place and their directories synced: a call costs about one sync, not one
// per blob.
func (d *Dir) Put(ctx context.Context, blobs ...polyloop.Blob) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, b := range blobs {
		if err := b.Check(); err != nil {
			return err
		}
	}
	var files []pending
	defer func() {
		for _, f := range files {
			if f.tmp != "" {
				os.Remove(f.tmp)
			}
		}
	}()
	for _, b := range blobs {
		if err := ctx.Err(); err != nil {
			return err
		}
		p, _ := d.blobPath(b.Digest)
		if touch(p) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if len(b.Refs) > 0 { // the references land before the blob
			f, err := writeTemp(p+".refs", []byte(strings.Join(b.Refs, "\n")+"\n"))
			files = append(files, f)
			if err != nil {
				return err
			}
		}
		f, err := writeTemp(p, b.Data)
		files = append(files, f)
		if err != nil {
			return err
		}
	}
	if err := eachConcurrently(len(files), func(i int) error { return syncFile(files[i].tmp) }); err != nil {
		return err
	}
	dirs := map[string]bool{}
	for i := range files {
		if err := os.Rename(files[i].tmp, files[i].path); err != nil {
			return err
		}
		files[i].tmp = ""
		dirs[filepath.Dir(files[i].path)] = true
	}
	var list []string
	for dir := range dirs {
		list = append(list, dir)
	}
	return eachConcurrently(len(list), func(i int) error { return syncDir(list[i]) })
}

// pending is a blob written to a temporary file, to be renamed to path.
type pending struct{ tmp, path string }

func writeTemp(p string, data []byte) (pending, error) {
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return pending{}, err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return pending{tmp: f.Name(), path: p}, err
}

func syncFile(p string) error {
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// eachConcurrently runs f(0..n-1) in goroutines and returns their errors.
func eachConcurrently(n int, f func(int) error) error {
	if n == 1 {
		return f(0)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// touch sets p's modification time to now and reports whether p exists.
func touch(p string) bool {
	now := time.Now()
	return os.Chtimes(p, now, now) == nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// Get reads a blob and checks its digest.
func (d *Dir) Get(ctx context.Context, digest string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := d.blobPath(digest)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", polyloop.ErrBlobNotFound, digest)
	}
	if err != nil {
		return nil, err
	}
	if got := polyloop.DigestOf(data); got != digest {
		return nil, fmt.Errorf("snapshotstore: blob %s is damaged (its data has digest %s)", digest, got)
	}
	return data, nil
}

// Refs reads a blob's references.
func (d *Dir) Refs(ctx context.Context, digest string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := d.blobPath(digest)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", polyloop.ErrBlobNotFound, digest)
	}
	return readRefs(p)
}

func readRefs(p string) ([]string, error) {
	raw, err := os.ReadFile(p + ".refs")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(raw)), nil
}

// Keep touches the blobs held and returns the others.
func (d *Dir) Keep(ctx context.Context, digests []string) ([]string, error) {
	var missing []string
	for _, dg := range digests {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p, err := d.blobPath(dg)
		if err != nil || !touch(p) {
			missing = append(missing, dg)
		}
	}
	return missing, nil
}

func (d *Dir) pinDir(holder string) string {
	return filepath.Join(d.root, "pins", hex.EncodeToString([]byte(holder)))
}

// Pin writes holder's pin of digest.
func (d *Dir) Pin(ctx context.Context, holder, digest string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := d.blobPath(digest)
	if err != nil {
		return err
	}
	if !touch(p) {
		return fmt.Errorf("%w: pin %s", polyloop.ErrBlobNotFound, digest)
	}
	dir := d.pinDir(holder)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// A pin is an empty file: its directory entry, once synced, is all
	// there is to make durable.
	f, err := os.OpenFile(filepath.Join(dir, strings.TrimPrefix(digest, "sha256:")), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	f.Close()
	return eachConcurrently(2, func(i int) error { return syncDir([]string{dir, filepath.Dir(dir)}[i]) })
}

// Holders implements polyloop.PinHolders: the holders with a pin
// directory.
func (d *Dir) Holders(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(filepath.Join(d.root, "pins"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		h, err := hex.DecodeString(e.Name())
		if err != nil || !e.IsDir() {
			continue // not a holder's directory
		}
		out = append(out, string(h))
	}
	return out, nil
}

// Unpin removes holder's pins.
func (d *Dir) Unpin(ctx context.Context, holder string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.RemoveAll(d.pinDir(holder)); err != nil {
		return err
	}
	return syncDir(filepath.Join(d.root, "pins"))
}

// Sweep marks from every pin and removes the unmarked blobs older than
// grace.
func (d *Dir) Sweep(ctx context.Context, grace time.Duration) (polyloop.SweepResult, error) {
	var res polyloop.SweepResult
	roots, err := d.roots()
	if err != nil {
		return res, err
	}
	marked := Reach(roots, func(dg string) []string {
		p, err := d.blobPath(dg)
		if err != nil {
			return nil
		}
		refs, _ := readRefs(p)
		return refs
	})
	cutoff := time.Now().Add(-grace)
	base := filepath.Join(d.root, "blobs", "sha256")
	err = filepath.WalkDir(base, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		name := e.Name()
		if strings.HasSuffix(name, ".refs") || strings.HasPrefix(name, ".tmp-") {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		digest := "sha256:" + filepath.Base(filepath.Dir(p)) + name
		if marked[digest] || !info.ModTime().Before(cutoff) {
			res.Kept++
			res.KeptBytes += info.Size()
			return nil
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		os.Remove(p + ".refs")
		res.Removed++
		res.RemovedBytes += info.Size()
		return nil
	})
	return res, err
}

func (d *Dir) roots() ([]string, error) {
	holders, err := os.ReadDir(filepath.Join(d.root, "pins"))
	if err != nil {
		return nil, err
	}
	var roots []string
	for _, h := range holders {
		pins, err := os.ReadDir(filepath.Join(d.root, "pins", h.Name()))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		for _, p := range pins {
			if !strings.HasPrefix(p.Name(), ".tmp-") {
				roots = append(roots, "sha256:"+p.Name())
			}
		}
	}
	return roots, nil
}
