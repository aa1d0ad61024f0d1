//go:build linux

package bwrapenv

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/envsnap"
	"github.com/polyloop/polyloop/snapshotstore"
)

// These tests drive the host side of snapshots and restores over a plain
// directory standing for the overlay's upper layer: what a process of the
// sandbox can do to it between the scan and the read (or before a
// restore) is done by the test itself, deterministically.

var testImage = polyloop.DigestOf([]byte("upper-test-image"))

func mkfile(t *testing.T, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshotOf writes scanned and returns the manifest and the content of
// every file it holds.
func snapshotOf(t *testing.T, scanned []envsnap.Scanned) (envsnap.Manifest, map[string]string, error) {
	t.Helper()
	ctx := context.Background()
	store := snapshotstore.NewMemory()
	ref, err := envsnap.NewWriter(store, "run", testImage).Write(ctx, scanned)
	if err != nil {
		return envsnap.Manifest{}, nil, err
	}
	m, err := envsnap.Load(ctx, store, ref)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range m.Entries {
		if e.Kind == envsnap.File {
			var b bytes.Buffer
			if err := envsnap.WriteContent(ctx, store, e, &b); err != nil {
				t.Fatal(err)
			}
			files[e.Path] = b.String()
		}
	}
	return m, files, nil
}

func noSecret(t *testing.T, files map[string]string, secret string) {
	t.Helper()
	for p, c := range files {
		if strings.Contains(c, secret) {
			t.Errorf("the snapshot holds the host's secret as %s: %q", p, c)
		}
	}
}

// TestScanNoFollowSwappedLink: a file the scan listed as regular, then
// replaced by a symbolic link to a host file (a background process of the
// sandbox can do that at any moment), must not be read through the link.
func TestScanNoFollowSwappedLink(t *testing.T) {
	upper, host := t.TempDir(), t.TempDir()
	secret := filepath.Join(host, "secret")
	mkfile(t, secret, "host-secret-1")
	mkfile(t, upper+"/work/f", "mine")
	scanned, err := scanUpper(upper, nil, os.Getuid())
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(upper + "/work/f")
	if err := os.Symlink(secret, upper+"/work/f"); err != nil {
		t.Fatal(err)
	}
	_, files, err := snapshotOf(t, scanned)
	if err != nil {
		t.Fatal(err) // a path that changed under the scan is not a failure either
	}
	noSecret(t, files, "host-secret-1")
}

// TestScanNoFollowSwappedParent: a directory the scan walked, replaced by
// a symbolic link to a host directory before its files are read.
func TestScanNoFollowSwappedParent(t *testing.T) {
	upper, host := t.TempDir(), t.TempDir()
	mkfile(t, host+"/f", "host-secret-2")
	mkfile(t, upper+"/work/d/f", "mine")
	scanned, err := scanUpper(upper, nil, os.Getuid())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(upper+"/work/d", upper+"/work/d.old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(host, upper+"/work/d"); err != nil {
		t.Fatal(err)
	}
	_, files, err := snapshotOf(t, scanned)
	if err != nil {
		t.Fatal(err)
	}
	noSecret(t, files, "host-secret-2")
}

// TestScanSymlinkIsLink: a symbolic link of the upper layer is stored as a
// link (its target as written), never as the content it points to.
func TestScanSymlinkIsLink(t *testing.T) {
	upper, host := t.TempDir(), t.TempDir()
	mkfile(t, host+"/secret", "host-secret-3")
	if err := os.MkdirAll(upper+"/work", 0o755); err != nil {
		t.Fatal(err)
	}
	os.Symlink(host+"/secret", upper+"/work/l")
	os.Symlink(host, upper+"/work/dl")
	scanned, err := scanUpper(upper, nil, os.Getuid())
	if err != nil {
		t.Fatal(err)
	}
	m, files, err := snapshotOf(t, scanned)
	if err != nil {
		t.Fatal(err)
	}
	noSecret(t, files, "host-secret-3")
	kinds := map[string]envsnap.Kind{}
	for _, e := range m.Entries {
		kinds[e.Path] = e.Kind
	}
	if kinds["/work/l"] != envsnap.Symlink || kinds["/work/dl"] != envsnap.Symlink || len(kinds) != 3 {
		t.Errorf("entries %v: want /work, and /work/l and /work/dl as links", kinds)
	}
}

// TestScanVanishedFile: a file that a background process renamed away
// between the scan and the read is absent from the snapshot, not a failure
// of it (`echo > f.tmp; mv f.tmp f` in a loop).
func TestScanVanishedFile(t *testing.T) {
	upper := t.TempDir()
	mkfile(t, upper+"/work/f.tmp", "new")
	mkfile(t, upper+"/work/f", "old")
	scanned, err := scanUpper(upper, nil, os.Getuid())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(upper+"/work/f.tmp", upper+"/work/f"); err != nil {
		t.Fatal(err)
	}
	m, files, err := snapshotOf(t, scanned)
	if err != nil {
		t.Fatalf("snapshot after a file vanished: %v", err)
	}
	if _, ok := files["/work/f.tmp"]; ok {
		t.Errorf("the vanished file is in the snapshot: %v", m.Entries)
	}
	if files["/work/f"] != "new" {
		t.Errorf("/work/f = %q, want what is there when it is read (%q)", files["/work/f"], "new")
	}
}

// TestScanVanishedWhileListing: paths that vanish between a directory's
// listing and their stat (a file, a directory) are left out of the scan.
func TestScanVanishedWhileListing(t *testing.T) {
	upper := t.TempDir()
	mkfile(t, upper+"/work/a", "a")
	mkfile(t, upper+"/work/gone", "g")
	mkfile(t, upper+"/work/gonedir/x", "x")
	mkfile(t, upper+"/work/z", "z")
	afterList = func(rel string) {
		if rel == "/work" {
			os.Remove(upper + "/work/gone")
			os.RemoveAll(upper + "/work/gonedir")
		}
	}
	defer func() { afterList = nil }()
	scanned, err := scanUpper(upper, nil, os.Getuid())
	if err != nil {
		t.Fatalf("scan while paths vanish: %v", err)
	}
	var got []string
	for _, s := range scanned {
		got = append(got, s.Entry.Path)
	}
	if strings.Join(got, " ") != "/work /work/a /work/z" {
		t.Errorf("scanned %v, want /work /work/a /work/z", got)
	}
}

// TestApplyUpperStaysInside: a manifest whose entries lie under a
// symbolic link (to a host directory, absolute or relative) never writes
// outside the upper layer.
func TestApplyUpperStaysInside(t *testing.T) {
	ctx := context.Background()
	store := snapshotstore.NewMemory()
	data := []byte("planted")
	chunk := polyloop.DigestOf(data)
	if err := store.Put(ctx, polyloop.Blob{Digest: chunk, Data: data}); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	upper, host := filepath.Join(root, "upper"), filepath.Join(root, "host")
	for _, d := range []string{upper, host} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, target := range []string{host, "../../host", "../host"} {
		m := envsnap.Manifest{Version: envsnap.Version, Image: testImage, Entries: []envsnap.Entry{
			{Path: "/work", Kind: envsnap.Dir, Mode: 0o755},
			{Path: "/work/l", Kind: envsnap.Symlink, Target: target},
			{Path: "/work/l/planted", Kind: envsnap.File, Mode: 0o644, Size: int64(len(data)), Chunks: []string{chunk}},
			{Path: "/work/l/dir", Kind: envsnap.Dir, Mode: 0o755},
			{Path: "/work/l/link", Kind: envsnap.Symlink, Target: "x"},
			{Path: "/work/l/gone", Kind: envsnap.Deleted},
		}}
		removeAll(upper)
		os.Mkdir(upper, 0o755)
		applyUpper(ctx, store, m, upper, os.Getuid()) // may fail: it must not write outside
		if ents, _ := os.ReadDir(host); len(ents) > 0 {
			t.Errorf("link to %s: a restore wrote outside the upper layer: %v", target, ents)
			removeAll(host)
			os.Mkdir(host, 0o755)
		}
	}
}
