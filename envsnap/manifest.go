// Package envsnap is the format of an environment snapshot and the
// incremental writer that every backend shares.
//
// A snapshot is the filesystem of an environment as changes to its image:
// a manifest blob listing, by path, every file, directory and symbolic link
// that differs from the image (with mode, owner, modification time and
// content) and every path deleted from it, and the chunks of the files'
// content, each a blob of at most ChunkSize bytes. All of them live in a
// polyloop.BlobStore, content-addressed: a chunk that many files, steps or
// runs hold is stored once, and the manifest's references (its chunks) keep
// them while the manifest is pinned. The snapshot's reference
// (polyloop.EnvSnapshot) is the manifest's digest.
//
// A manifest is complete — it is the image's changes as a whole, never a
// delta on an earlier snapshot — so that restoring one needs that manifest
// and its chunks only, and no chain can grow with a run's length. What makes
// writing one cheap is the Writer: it hashes and stores only the files whose
// metadata changed since its previous snapshot.
package envsnap

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"sort"

	"github.com/polyloop/polyloop"
)

// Version is the manifest format's version.
const Version = 1

// ChunkSize bounds a chunk: a file's content is cut into pieces of this
// size (the last one shorter), so that blobs stay small and an append to a
// large file stores its last chunk again, not the file.
const ChunkSize = 4 << 20

// Kind is what an entry is.
type Kind string

// The kinds of entries.
const (
	File    Kind = "file"
	Dir     Kind = "dir"
	Symlink Kind = "symlink"
	// Deleted: the path, present in the image, is gone.
	Deleted Kind = "deleted"
)

// Manifest is a snapshot: an image and the changes to it.
type Manifest struct {
	Version int `json:"version"`
	// Image is the digest of the image the changes apply to.
	Image string `json:"image"`
	// Entries, sorted by path (a directory before what it holds).
	Entries []Entry `json:"entries"`
}

// Entry is one changed path.
type Entry struct {
	// Path is absolute and clean.
	Path string `json:"path"`
	Kind Kind   `json:"kind"`
	// Mode holds the permission bits with setuid, setgid and sticky.
	Mode uint32 `json:"mode,omitempty"`
	UID  int    `json:"uid,omitempty"`
	GID  int    `json:"gid,omitempty"`
	// MTime is the modification time in Unix nanoseconds.
	MTime int64 `json:"mtime,omitempty"`
	// Size and Chunks are a file's length and content.
	Size   int64    `json:"size,omitempty"`
	Chunks []string `json:"chunks,omitempty"`
	// Target is a symbolic link's target.
	Target string `json:"target,omitempty"`
	// Opaque marks a directory that replaces the image's directory of the
	// same path instead of adding to it (it was deleted and made again).
	Opaque bool `json:"opaque,omitempty"`
}

// Sort orders entries by path, a directory before what it holds.
func Sort(entries []Entry) {
	sort.Slice(entries, func(i, j int) bool { return pathLess(entries[i].Path, entries[j].Path) })
}

// pathLess orders paths component by component, so that "/a" < "/a/b" <
// "/a-b" ("/" sorts before every other byte).
func pathLess(a, b string) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		if ca == '/' {
			return true
		}
		if cb == '/' {
			return false
		}
		return ca < cb
	}
	return len(a) < len(b)
}

// Encode checks m and returns its blob: canonical JSON whose references
// are its chunks.
func Encode(m Manifest) (polyloop.Blob, error) {
	if err := m.check(); err != nil {
		return polyloop.Blob{}, err
	}
	data, err := json.Marshal(m)
	if err != nil {
		return polyloop.Blob{}, err
	}
	return polyloop.Blob{Digest: polyloop.DigestOf(data), Data: data, Refs: m.Chunks()}, nil
}

// Chunks lists the distinct chunk digests of m, sorted.
func (m Manifest) Chunks() []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range m.Entries {
		for _, c := range e.Chunks {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	slices.Sort(out)
	return out
}

// ErrBadManifest marks a manifest that breaks the format.
var ErrBadManifest = errors.New("envsnap: bad manifest")

func (m Manifest) check() error {
	if m.Version != Version {
		return fmt.Errorf("%w: version %d (this library reads %d)", ErrBadManifest, m.Version, Version)
	}
	if !polyloop.IsDigest(m.Image) {
		return fmt.Errorf("%w: image %q is not a digest", ErrBadManifest, m.Image)
	}
	for i, e := range m.Entries {
		if e.Path == "/" || !path.IsAbs(e.Path) || path.Clean(e.Path) != e.Path {
			return fmt.Errorf("%w: entry path %q", ErrBadManifest, e.Path)
		}
		if i > 0 && !pathLess(m.Entries[i-1].Path, e.Path) {
			return fmt.Errorf("%w: entries out of order at %q", ErrBadManifest, e.Path)
		}
		switch e.Kind {
		case File, Dir, Symlink, Deleted:
		default:
			return fmt.Errorf("%w: %q has kind %q", ErrBadManifest, e.Path, e.Kind)
		}
	}
	return nil
}

// Load reads the manifest a snapshot reference names. A reference the
// store does not hold is polyloop.ErrEnvSnapshotNotFound.
func Load(ctx context.Context, store polyloop.BlobStore, ref polyloop.EnvSnapshot) (Manifest, error) {
	var m Manifest
	if !polyloop.IsDigest(string(ref)) {
		return m, fmt.Errorf("%w: %q is not a snapshot reference", polyloop.ErrEnvSnapshotNotFound, ref)
	}
	data, err := store.Get(ctx, string(ref))
	if errors.Is(err, polyloop.ErrBlobNotFound) {
		return m, fmt.Errorf("%w: %s: %w", polyloop.ErrEnvSnapshotNotFound, ref, err)
	}
	if err != nil {
		return m, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return m, fmt.Errorf("%w: %s: %v", ErrBadManifest, ref, err)
	}
	if err := m.check(); err != nil {
		return m, fmt.Errorf("%s: %w", ref, err)
	}
	return m, nil
}

// WriteContent writes a file entry's content to w, chunk by chunk. A
// chunk the store does not hold is polyloop.ErrEnvSnapshotNotFound.
func WriteContent(ctx context.Context, store polyloop.BlobStore, e Entry, w io.Writer) error {
	var n int64
	for _, c := range e.Chunks {
		data, err := store.Get(ctx, c)
		if errors.Is(err, polyloop.ErrBlobNotFound) {
			return fmt.Errorf("%w: chunk %s of %s: %w", polyloop.ErrEnvSnapshotNotFound, c, e.Path, err)
		}
		if err != nil {
			return err
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
		n += int64(len(data))
	}
	if n != e.Size {
		return fmt.Errorf("%w: %s has %d bytes in its chunks, %d in the manifest", ErrBadManifest, e.Path, n, e.Size)
	}
	return nil
}

// LoadFor loads a snapshot's manifest and checks that it is a snapshot of
// image: one of another image is polyloop.ErrEnvSnapshotNotFound.
func LoadFor(ctx context.Context, store polyloop.BlobStore, ref polyloop.EnvSnapshot, image string) (Manifest, error) {
	m, err := Load(ctx, store, ref)
	if err != nil {
		return m, err
	}
	if m.Image != image {
		return m, fmt.Errorf("%w: snapshot %s is of image %s, the environment's is %s", polyloop.ErrEnvSnapshotNotFound, ref, m.Image, image)
	}
	return m, nil
}
