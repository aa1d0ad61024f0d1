package pgstore

import (
	"context"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/leasetest"
)

// openSpec opens "DSN#SCHEMA".
func openSpec(spec string) (polyloop.Store, error) {
	dsn, schema, _ := strings.Cut(spec, "#")
	return Open(context.Background(), dsn, &Options{Schema: schema})
}

// TestLeaseTwoProcesses: a real child process holds a run; this process and
// another are refused naming it; after SIGKILL the kernel closes the
// holder's connection, the server ends its session and this process takes
// the run over within LeaseDeadHolderBound (at once in practice), and no
// action ever ran in two processes at once.
func TestLeaseTwoProcesses(t *testing.T) {
	leasetest.MaybeChild(openSpec)
	if testing.Short() {
		t.Skip("re-executes the test binary; skipped with -short")
	}
	s := openT(t)
	leasetest.TwoProcesses(t, "TestLeaseTwoProcesses", dsn(t)+"#"+s.schema, openSpec, LeaseDeadHolderBound)
}
