package sqlitestore

import (
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/polylooptest"
)

var errInjected = errors.New("sqlitestore test: injected failure after the records were inserted")

// TestStoreContract runs the exported contract kit.
func TestStoreContract(t *testing.T) {
	open := func(t testing.TB, path string) *Store {
		s, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	var mu sync.Mutex
	paths := map[polyloop.Store]string{}
	polylooptest.TestStore(t, polylooptest.StoreHarness{
		New: func(t testing.TB) polyloop.Store {
			path := filepath.Join(t.TempDir(), "runs.db")
			s := open(t, path)
			mu.Lock()
			paths[s] = path
			mu.Unlock()
			return s
		},
		NewFaulty: func(t testing.TB) (polyloop.Store, func()) {
			s := open(t, filepath.Join(t.TempDir(), "runs.db"))
			var armed atomic.Bool
			// Armed, the hook fails the next Append on the fast path and
			// again on the careful path, where it disarms.
			s.afterInsert = func(_ string, careful bool) error {
				if careful && armed.CompareAndSwap(true, false) || !careful && armed.Load() {
					return errInjected
				}
				return nil
			}
			return s, func() { armed.Store(true) }
		},
		Reopen: func(t testing.TB, s polyloop.Store) polyloop.Store {
			mu.Lock()
			path := paths[s]
			mu.Unlock()
			if err := s.(*Store).Close(); err != nil {
				t.Fatal(err)
			}
			return open(t, path)
		},
	})
}
