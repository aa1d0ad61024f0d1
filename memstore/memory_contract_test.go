package memstore_test

import (
	"testing"

	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/polylooptest"
)

func TestMemoryConformance(t *testing.T) {
	polylooptest.TestMemoryStore(t, polylooptest.MemoryStoreHarness{
		New:  func(testing.TB) polylooptest.MemoryStore { return memstore.New() },
		Skip: map[string]string{"Reopen": "an in-memory store does not survive a restart"},
	})
}
