package storetest_test

import (
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/storetest"
	"github.com/polyloop/polyloop/memstore"
)

// TestRunOnMemstore runs the checks on the reference in-memory store, which
// must pass them: the checks ask nothing beyond the Store contract.
func TestRunOnMemstore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(*testing.T) polyloop.Store { return memstore.New() })
}
