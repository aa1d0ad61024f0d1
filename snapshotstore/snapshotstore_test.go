package snapshotstore_test

import (
	"path/filepath"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/polylooptest"
	"github.com/polyloop/polyloop/snapshotstore"
)

func TestMemoryConformance(t *testing.T) {
	polylooptest.TestBlobStore(t, polylooptest.BlobStoreHarness{
		New:  func(testing.TB) polyloop.BlobStore { return snapshotstore.NewMemory() },
		Skip: map[string]string{"Durable": "the memory store keeps nothing past the process"},
	})
}

func TestDirConformance(t *testing.T) {
	open := func(t testing.TB, dir string) polyloop.BlobStore {
		s, err := snapshotstore.OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	polylooptest.TestBlobStore(t, polylooptest.BlobStoreHarness{
		New: func(t testing.TB) polyloop.BlobStore { return open(t, filepath.Join(t.TempDir(), "snapshots")) },
		Reopen: func(t testing.TB, s polyloop.BlobStore) polyloop.BlobStore {
			return open(t, s.(*snapshotstore.Dir).Path())
		},
	})
}
