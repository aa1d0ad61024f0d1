package envsnap

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/polyloop/polyloop"
)

// Stat is what tells the Writer that a file may have changed: two scans
// that give a path equal Stats hold the same content. A backend fills what
// its platform gives (ctime and inode catch a rewrite that kept the size
// and the modification time; where they are not known they stay zero).
type Stat struct {
	Size  int64
	MTime int64
	CTime int64
	Ino   uint64
	Mode  uint32
}

// Scanned is one changed path found by a backend's scan: its entry (without
// Size and Chunks for a file) and, for a file, its Stat and a way to read
// its content.
//
// Open reads what is at the path when it is called, which may be later
// than the scan: a process of the environment may have changed it since.
// It MUST NOT follow a symbolic link the environment controls, and MUST
// give the content of a regular file only. A path that is gone, or is no
// longer a regular file, is an error that errors.Is fs.ErrNotExist: the
// Writer leaves the path out of the snapshot (as if the scan had not
// listed it), which is not a failure.
type Scanned struct {
	Entry Entry
	Stat  Stat
	Open  func() (io.ReadCloser, error)
}

// Writer writes the snapshots of one environment, incrementally: a file
// whose Stat is the one it had at the previous snapshot (or at the restore
// that started the environment) is neither read nor hashed again, and only
// the chunks the store does not hold are sent to it. It is not safe for
// concurrent use.
type Writer struct {
	store  polyloop.BlobStore
	holder string
	image  string
	files  map[string]cachedFile
	// pinned are the chunks of the last manifest pinned by holder: they
	// are reachable, so a sweep cannot take them.
	pinned map[string]bool
	buf    []byte
}

type cachedFile struct {
	stat   Stat
	size   int64
	chunks []string
}

// NewWriter returns a writer that pins its snapshots under holder (the run
// id) in store, for an environment of image (a digest).
func NewWriter(store polyloop.BlobStore, holder, image string) *Writer {
	return &Writer{store: store, holder: holder, image: image, files: map[string]cachedFile{}, pinned: map[string]bool{}}
}

// Primed tells the writer that the environment's filesystem is m (just
// restored from it, pinned by holder) and that the files of m now have the
// given stats.
func (w *Writer) Primed(m Manifest, stats map[string]Stat) {
	clear(w.files)
	clear(w.pinned)
	for _, e := range m.Entries {
		if e.Kind == File {
			if st, ok := stats[e.Path]; ok {
				w.files[e.Path] = cachedFile{stat: st, size: e.Size, chunks: e.Chunks}
			}
		}
		for _, c := range e.Chunks {
			w.pinned[c] = true
		}
	}
}

// Write makes a snapshot of the scanned paths durable and pinned, and
// returns its reference: new chunks and the manifest are stored (Keep,
// then Put of what is missing), then the manifest is pinned.
func (w *Writer) Write(ctx context.Context, scanned []Scanned) (polyloop.EnvSnapshot, error) {
	m := Manifest{Version: Version, Image: w.image}
	fresh := map[string][]byte{}
	files := make(map[string]cachedFile, len(w.files))
	for _, s := range scanned {
		e := s.Entry
		if e.Kind == File {
			cf, ok := w.files[e.Path]
			if !ok || cf.stat != s.Stat {
				var err error
				if cf, err = w.readFile(s, fresh); errors.Is(err, fs.ErrNotExist) {
					continue // gone since the scan (Scanned)
				} else if err != nil {
					return "", err
				}
				cf.stat = s.Stat
			}
			files[e.Path] = cf
			e.Size, e.Chunks = cf.size, cf.chunks
		}
		m.Entries = append(m.Entries, e)
	}
	Sort(m.Entries)
	blob, err := Encode(m)
	if err != nil {
		return "", err
	}
	if err := w.store1(ctx, blob, fresh); err != nil {
		return "", err
	}
	if err := w.store.Pin(ctx, w.holder, blob.Digest); err != nil {
		return "", err
	}
	w.files = files
	clear(w.pinned)
	for _, c := range blob.Refs {
		w.pinned[c] = true
	}
	return polyloop.EnvSnapshot(blob.Digest), nil
}

// store1 stores what the manifest needs that the store may not hold: its
// chunks that the last pinned manifest did not have, and itself.
func (w *Writer) store1(ctx context.Context, manifest polyloop.Blob, fresh map[string][]byte) error {
	check := []string{manifest.Digest}
	for _, c := range manifest.Refs {
		if !w.pinned[c] {
			check = append(check, c)
		}
	}
	missing, err := w.store.Keep(ctx, check)
	if err != nil {
		return err
	}
	var put []polyloop.Blob
	for _, d := range missing {
		switch {
		case d == manifest.Digest:
			put = append(put, manifest)
		case fresh[d] != nil || d == emptyChunk:
			put = append(put, polyloop.Blob{Digest: d, Data: fresh[d]})
		default:
			return fmt.Errorf("%w: chunk %s is in no store and was not read again", polyloop.ErrEnvSnapshotNotFound, d)
		}
	}
	return w.store.Put(ctx, put...)
}

var emptyChunk = polyloop.DigestOf(nil)

// readFile reads a file, cuts it into chunks and hashes them, keeping the
// data of each chunk in fresh.
func (w *Writer) readFile(s Scanned, fresh map[string][]byte) (cachedFile, error) {
	r, err := s.Open()
	if err != nil {
		return cachedFile{}, fmt.Errorf("read %s: %w", s.Entry.Path, err)
	}
	defer r.Close()
	var cf cachedFile
	if w.buf == nil {
		w.buf = make([]byte, ChunkSize)
	}
	buf := w.buf
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			sum := sha256.Sum256(buf[:n])
			d := "sha256:" + hex.EncodeToString(sum[:])
			if fresh[d] == nil {
				fresh[d] = append([]byte(nil), buf[:n]...)
			}
			cf.chunks = append(cf.chunks, d)
			cf.size += int64(n)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return cf, nil
		}
		if err != nil {
			return cachedFile{}, fmt.Errorf("read %s: %w", s.Entry.Path, err)
		}
	}
}
