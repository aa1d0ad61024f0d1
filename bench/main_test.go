package bench_test

import (
	"os"
	"testing"

	"github.com/polyloop/polyloop/bench"
)

// TestMain lets the test binary serve as its own measurement child, as
// polyloop's main does.
func TestMain(m *testing.M) {
	bench.MaybeRunChild()
	os.Exit(m.Run())
}
