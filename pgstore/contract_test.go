package pgstore

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/polylooptest"
)

// TestStoreContract runs the exported contract kit, each store in a schema
// of its own.
func TestStoreContract(t *testing.T) {
	dsn(t)
	polylooptest.TestStore(t, polylooptest.StoreHarness{
		New: func(t testing.TB) polyloop.Store { return openT(t) },
		NewFaulty: func(t testing.TB) (polyloop.Store, func()) {
			s := openT(t)
			var armed atomic.Bool
			s.failInBatch = func() bool { return armed.CompareAndSwap(true, false) }
			return s, func() { armed.Store(true) }
		},
		Reopen: func(t testing.TB, s polyloop.Store) polyloop.Store {
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
