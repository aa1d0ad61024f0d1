package sqlitestore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/storetest"
	"github.com/polyloop/polyloop/internal/workload"
	"github.com/polyloop/polyloop/sqlitestore"
)

// TestCrashKill9Resume runs the shared SIGKILL crash test
// (storetest.Crash) on SQLite files, a fresh one per scenario. More kill
// points: go test -run TestCrashKill9Resume ./sqlitestore -args
// -crash.kills=1000.
func TestCrashKill9Resume(t *testing.T) {
	dir := os.Getenv("POLYLOOP_CRASH_DIR")
	if dir == "" && os.Getenv("POLYLOOP_CRASH_CHILD") == "" {
		dir = t.TempDir()
	}
	storetest.Crash(t, storetest.CrashHarness{
		Test:     "TestCrashKill9Resume",
		Location: func(t *testing.T, sc int) string { return filepath.Join(dir, fmt.Sprintf("crash%d.db", sc)) },
		Open:     func(path string) (polyloop.Store, error) { return sqlitestore.Open(path, nil) },
		InFlight: func(s polyloop.Store, f func()) {
			sqlitestore.SetAfterInsert(s.(*sqlitestore.Store), func(string) { f() })
		},
	})
}

// The two-process tests' run: workload W (6 steps) as crashRun, its noop
// described as crashNoop describes itself.
const (
	crashSteps = 6
	crashRun   = "crash-run"
)

// crashNoop is workload W's noop with a fixed description, so that every
// executor of these runs gives the same snapshot.
type crashNoop struct{}

func (crashNoop) Describe() polyloop.Component { return polyloop.Component{Name: "crashtest.noop"} }

func (crashNoop) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	return workload.NoopExecutor{}.Execute(ctx, a)
}

// crashWorkload is the two-process tests' workload, with exec executing
// noop (nil: crashNoop).
func crashWorkload(exec polyloop.ActionExecutor) workload.W {
	if exec == nil {
		exec = crashNoop{}
	}
	return workload.W{Steps: crashSteps, Executor: exec}
}

// referenceCrashLog is the uninterrupted run's log.
func referenceCrashLog(t *testing.T) []polyloop.Record {
	t.Helper()
	s := newStore(t)
	w := crashWorkload(nil)
	res, err := w.Runner(s).Run(context.Background(), crashRun, w.Agent(), w.Task())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Check(res); err != nil {
		t.Fatal(err)
	}
	return storetest.ReadAll(t, context.Background(), s, crashRun)
}

func childFail(what string, err error) {
	fmt.Fprintf(os.Stderr, "child: %s: %v\n", what, err)
	os.Exit(3)
}
