package envsnap_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/envsnap"
	"github.com/polyloop/polyloop/snapshotstore"
)

// put stores a manifest of entries over image and returns its reference.
func put(t *testing.T, store polyloop.BlobStore, entries ...envsnap.Entry) polyloop.EnvSnapshot {
	t.Helper()
	envsnap.Sort(entries)
	b, err := envsnap.Encode(envsnap.Manifest{Version: envsnap.Version, Image: image, Entries: entries})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Put(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	return polyloop.EnvSnapshot(b.Digest)
}

// TestDiff: every pairing of an entry in A, in B, in both or in neither
// (the image's state) gets its kind; equal entries and directories whose
// only change is their modification time are not listed.
func TestDiff(t *testing.T) {
	ctx := context.Background()
	store := snapshotstore.NewMemory()
	c1, c2 := polyloop.DigestOf([]byte("one")), polyloop.DigestOf([]byte("two"))
	f := func(p, c string, mtime int64) envsnap.Entry {
		return envsnap.Entry{Path: p, Kind: envsnap.File, Mode: 0o644, Size: 3, Chunks: []string{c}, MTime: mtime}
	}
	del := func(p string) envsnap.Entry { return envsnap.Entry{Path: p, Kind: envsnap.Deleted} }
	dir := func(mtime int64) envsnap.Entry {
		return envsnap.Entry{Path: "/work", Kind: envsnap.Dir, Mode: 0o755, MTime: mtime}
	}
	a := put(t, store, dir(1), f("/work/same", c1, 1), f("/work/edit", c1, 1), f("/work/new-a", c1, 1),
		del("/etc/motd"), del("/etc/gone-both"), f("/etc/hosts", c1, 1))
	b := put(t, store, dir(2), f("/work/same", c1, 9), f("/work/edit", c2, 1), f("/work/new-b", c2, 1),
		del("/etc/issue"), del("/etc/gone-both"), del("/etc/hosts"))
	got, err := envsnap.DiffRefs(ctx, store, a, b)
	if err != nil {
		t.Fatal(err)
	}
	want := []envsnap.Change{
		{Path: "/etc/hosts", Kind: envsnap.Removed},
		{Path: "/etc/issue", Kind: envsnap.Removed},
		{Path: "/etc/motd", Kind: envsnap.Added},
		{Path: "/work/edit", Kind: envsnap.Changed},
		{Path: "/work/new-a", Kind: envsnap.OnlyA},
		{Path: "/work/new-b", Kind: envsnap.OnlyB},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("DiffRefs:\n got %v\nwant %v", got, want)
	}
	if got, err := envsnap.DiffRefs(ctx, store, a, a); err != nil || got != nil {
		t.Fatalf("DiffRefs(a, a) = %v, %v", got, err)
	}
	// An empty reference is the image unchanged.
	got, err = envsnap.DiffRefs(ctx, store, "", put(t, store, f("/work/x", c1, 1)))
	if err != nil || !slices.Equal(got, []envsnap.Change{{Path: "/work/x", Kind: envsnap.OnlyB}}) {
		t.Fatalf("DiffRefs(\"\", b) = %v, %v", got, err)
	}
	missing := polyloop.EnvSnapshot(polyloop.DigestOf([]byte("absent")))
	if _, err := envsnap.DiffRefs(ctx, store, a, missing); !errors.Is(err, polyloop.ErrEnvSnapshotNotFound) {
		t.Fatalf("DiffRefs with a missing snapshot: %v", err)
	}
}
