//go:build unix

package sqlitestore_test

import (
	"path/filepath"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/leasetest"
	"github.com/polyloop/polyloop/sqlitestore"
)

func openSpec(path string) (polyloop.Store, error) { return sqlitestore.Open(path, nil) }

// TestLeaseTwoProcesses: a real child process holds a run; this process and
// another are refused naming it; after SIGKILL this process takes the run
// over at its first attempt (the kernel dropped the flock with the
// process), and no action ever ran in two processes at once.
func TestLeaseTwoProcesses(t *testing.T) {
	leasetest.MaybeChild(openSpec)
	if testing.Short() {
		t.Skip("re-executes the test binary; skipped with -short")
	}
	path := filepath.Join(t.TempDir(), "two.db")
	open(t, path) // the schema exists before the children start
	leasetest.TwoProcesses(t, "TestLeaseTwoProcesses", path, openSpec, 0)
}
