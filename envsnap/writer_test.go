package envsnap_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/envsnap"
	"github.com/polyloop/polyloop/snapshotstore"
)

var image = polyloop.DigestOf([]byte("image"))

// file is a scanned file whose content is data, counting its opens.
func file(p string, data []byte, st envsnap.Stat, opens *int) envsnap.Scanned {
	return envsnap.Scanned{Entry: envsnap.Entry{Path: p, Kind: envsnap.File, Mode: 0o644}, Stat: st,
		Open: func() (io.ReadCloser, error) { *opens++; return io.NopCloser(bytes.NewReader(data)), nil }}
}

// TestWriterIncremental: a file whose stat did not change since the
// previous snapshot is not read again; one whose stat changed is; an
// append to a file larger than a chunk stores its last chunk only.
func TestWriterIncremental(t *testing.T) {
	ctx := context.Background()
	store := snapshotstore.NewMemory()
	w := envsnap.NewWriter(store, "run-1", image)
	big := bytes.Repeat([]byte("x"), envsnap.ChunkSize+10)
	var bigOpens, smallOpens int
	scan := func(bigData []byte, bigStat, smallStat envsnap.Stat) []envsnap.Scanned {
		return []envsnap.Scanned{
			{Entry: envsnap.Entry{Path: "/work", Kind: envsnap.Dir, Mode: 0o755}},
			file("/work/big", bigData, bigStat, &bigOpens),
			file("/work/small", []byte("small"), smallStat, &smallOpens),
			{Entry: envsnap.Entry{Path: "/etc/passwd", Kind: envsnap.Deleted}},
		}
	}
	s1, err := w.Write(ctx, scan(big, envsnap.Stat{Size: 1, MTime: 1}, envsnap.Stat{Size: 5, MTime: 1}))
	if err != nil {
		t.Fatal(err)
	}
	grown := append(append([]byte(nil), big...), []byte("more")...)
	s2, err := w.Write(ctx, scan(grown, envsnap.Stat{Size: 2, MTime: 2}, envsnap.Stat{Size: 5, MTime: 1}))
	if err != nil {
		t.Fatal(err)
	}
	if bigOpens != 2 || smallOpens != 1 {
		t.Errorf("opens: big %d (changed twice: want 2), small %d (unchanged: want 1)", bigOpens, smallOpens)
	}
	m1, err := envsnap.Load(ctx, store, s1)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := envsnap.Load(ctx, store, s2)
	if err != nil {
		t.Fatal(err)
	}
	b1, b2 := m1.Entries[2], m2.Entries[2] // sorted: /etc/passwd, /work, /work/big, /work/small
	if b1.Path != "/work/big" || len(b1.Chunks) != 2 || b1.Chunks[0] != b2.Chunks[0] || b1.Chunks[1] == b2.Chunks[1] {
		t.Errorf("an append should change the last chunk only: %v then %v", b1.Chunks, b2.Chunks)
	}
	var got bytes.Buffer
	if err := envsnap.WriteContent(ctx, store, b2, &got); err != nil || !bytes.Equal(got.Bytes(), grown) {
		t.Errorf("content read back: %d bytes, %v", got.Len(), err)
	}
	res, err := store.Sweep(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Removed != 0 || res.Kept != 6 { // 2 manifests, the first chunk, two last chunks, "small"
		t.Errorf("both snapshots are pinned by the run: sweep %+v, want 6 kept", res)
	}
	if !strings.HasPrefix(string(s2), "sha256:") {
		t.Errorf("reference %q", s2)
	}
}

func TestManifestRefusesDisorder(t *testing.T) {
	m := envsnap.Manifest{Version: envsnap.Version, Image: image, Entries: []envsnap.Entry{{Path: "/b", Kind: envsnap.Dir}, {Path: "/a", Kind: envsnap.Dir}}}
	if _, err := envsnap.Encode(m); err == nil {
		t.Error("a manifest out of order was encoded")
	}
	envsnap.Sort(m.Entries)
	if _, err := envsnap.Encode(m); err != nil {
		t.Error(err)
	}
}

// TestWriterVanished: a file whose Open says it is gone (fs.ErrNotExist:
// it vanished, or is no longer a regular file, since the scan) is left out
// of the snapshot, which is written; any other read error fails it.
func TestWriterVanished(t *testing.T) {
	ctx := context.Background()
	store := snapshotstore.NewMemory()
	w := envsnap.NewWriter(store, "run-1", image)
	var opens int
	gone := envsnap.Scanned{Entry: envsnap.Entry{Path: "/work/f.tmp", Kind: envsnap.File, Mode: 0o644}, Stat: envsnap.Stat{Size: 1},
		Open: func() (io.ReadCloser, error) {
			return nil, &fs.PathError{Op: "open", Path: "/work/f.tmp", Err: fs.ErrNotExist}
		}}
	ref, err := w.Write(ctx, []envsnap.Scanned{file("/work/f", []byte("f"), envsnap.Stat{Size: 1}, &opens), gone})
	if err != nil {
		t.Fatalf("a file gone since the scan failed the snapshot: %v", err)
	}
	m, err := envsnap.Load(ctx, store, ref)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Entries) != 1 || m.Entries[0].Path != "/work/f" {
		t.Errorf("entries %+v, want /work/f only", m.Entries)
	}
	broken := gone
	broken.Open = func() (io.ReadCloser, error) { return nil, errors.New("disk on fire") }
	if _, err := w.Write(ctx, []envsnap.Scanned{broken}); err == nil {
		t.Error("a read error other than a vanished file did not fail the snapshot")
	}
}
