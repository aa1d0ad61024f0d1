package sqlitestore_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/polyloop/polyloop/internal/storetest"
	"github.com/polyloop/polyloop/sqlitestore"
)

const envShareChild = "POLYLOOP_SHARE_CHILD" // set in the child: the database path

// TestTwoProcessesShareFile: a child process and this one write runs to the
// same file at the same time. Their write transactions contend for SQLite's
// lock; the busy timeout makes them wait for each other instead of failing.
func TestTwoProcessesShareFile(t *testing.T) {
	const steps = 100
	if path := os.Getenv(envShareChild); path != "" {
		s, err := sqlitestore.Open(path, nil)
		if err == nil {
			fmt.Println("ready")
			err = storetest.WriteRun(context.Background(), s, "child", steps)
			s.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	if testing.Short() {
		t.Skip("re-executes the test binary; skipped with -short")
	}
	path := filepath.Join(t.TempDir(), "shared.db")
	s := open(t, path) // creates the schema before the child starts
	c := storetest.StartChild(t, "TestTwoProcessesShareFile", envShareChild+"="+path)
	drained := make(chan struct{})
	go func() { io.Copy(io.Discard, c.Out); close(drained) }()
	ctx := context.Background()
	werr := storetest.WriteRun(ctx, s, "parent", steps)
	<-drained
	if err := c.Cmd.Wait(); err != nil {
		t.Fatalf("child: %v; stderr: %s", err, c.Stderr.String())
	}
	if werr != nil {
		t.Fatalf("parent: %v", werr)
	}
	for _, run := range []string{"parent", "child"} {
		storetest.SameLog(t, storetest.ReadAll(t, ctx, s, run), storetest.Prefix(run, 2+4*steps))
	}
}
