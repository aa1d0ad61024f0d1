package memstore_test

import (
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/polylooptest"
)

func TestConformance(t *testing.T) {
	polylooptest.TestStore(t, polylooptest.StoreHarness{
		New: func(testing.TB) polyloop.Store { return memstore.New() },
		NewFaulty: func(testing.TB) (polyloop.Store, func()) {
			s := memstore.New()
			// SetFaults resets the append counter: the next Append fails.
			return s, func() { s.SetFaults(memstore.Options{FailAppend: 1}) }
		},
		Skip: map[string]string{"Reopen": "memstore keeps nothing across a restart"},
	})
}
