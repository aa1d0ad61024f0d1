package pgstore

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/polylooptest"
)

var errInjected = errors.New("pgstore test: injected failure before commit")

// TestStoreContract runs the exported contract kit, each store in a schema
// of its own.
func TestStoreContract(t *testing.T) {
	dsn(t)
	polylooptest.TestStore(t, polylooptest.StoreHarness{
		New: func(t testing.TB) polyloop.Store { return openT(t) },
		NewFaulty: func(t testing.TB) (polyloop.Store, func()) {
			s := openT(t)
			var armed atomic.Bool
			s.beforeCommit = func(context.Context, pgx.Tx) error {
				if armed.CompareAndSwap(true, false) {
					return errInjected
				}
				return nil
			}
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
