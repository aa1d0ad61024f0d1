package memstore_test

import (
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/polylooptest"
)

func TestLeaseConformance(t *testing.T) {
	polylooptest.TestLeaser(t, polylooptest.LeaseHarness{
		New: func(testing.TB) polyloop.Leaser { return memstore.New() },
		// The leases of a memstore are its own: its peer is itself.
		Crash: func(_ testing.TB, l polyloop.Leaser, ls polyloop.Lease) { l.(*memstore.Store).AbandonLease(ls) },
	})
}
