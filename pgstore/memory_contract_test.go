package pgstore

import (
	"context"
	"testing"

	"github.com/polyloop/polyloop/polylooptest"
)

// TestMemoryContract runs the memory ports' conformance kit, each store in
// a schema of its own.
func TestMemoryContract(t *testing.T) {
	dsn(t)
	polylooptest.TestMemoryStore(t, polylooptest.MemoryStoreHarness{
		New: func(t testing.TB) polylooptest.MemoryStore { return openT(t) },
		Reopen: func(t testing.TB, s polylooptest.MemoryStore) polylooptest.MemoryStore {
			old := s.(*Store)
			old.Close()
			s2, err := Open(context.Background(), dsn(t), &Options{Schema: old.schema})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s2.Close() })
			return s2
		},
	})
}
