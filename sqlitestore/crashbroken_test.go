package sqlitestore_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/storetest"
	"github.com/polyloop/polyloop/sqlitestore"
)

// envBroken names the broken store a TestCrashCatchesBrokenStores child
// runs the crash test on.
const envBroken = "POLYLOOP_CRASH_BROKEN"

// ackEarly acknowledges each Append at once and writes it only at the next
// Append or read: a SIGKILL right after an acknowledgement loses records.
type ackEarly struct {
	*sqlitestore.Store
	pending []polyloop.Row
	run     string
}

func (s *ackEarly) flush(ctx context.Context) error {
	if len(s.pending) == 0 {
		return nil
	}
	err := s.Store.Append(ctx, s.run, s.pending)
	s.pending = nil
	return err
}

func (s *ackEarly) Append(ctx context.Context, runID string, records []polyloop.Row) error {
	if err := s.flush(ctx); err != nil {
		return err
	}
	s.pending, s.run = slices.Clone(records), runID // rows and their bytes, copied: the Runner reuses them
	for i := range s.pending {
		s.pending[i].Data = slices.Clone(s.pending[i].Data)
	}
	return nil
}

func (s *ackEarly) ReadRows(ctx context.Context, runID string) ([]polyloop.Row, error) {
	if err := s.flush(ctx); err != nil {
		return nil, err
	}
	return s.Store.ReadRows(ctx, runID)
}

func (s *ackEarly) Close() error {
	s.flush(context.Background())
	return s.Store.Close()
}

// oneByOne writes the records of an Append one transaction each; between
// the first and the second it calls between (the in-flight kill point).
type oneByOne struct {
	*sqlitestore.Store
	between func()
}

func (s *oneByOne) Append(ctx context.Context, runID string, records []polyloop.Row) error {
	for i, r := range records {
		if err := s.Store.Append(ctx, runID, []polyloop.Row{r}); err != nil {
			return err
		}
		if i == 0 && s.between != nil {
			s.between()
		}
	}
	return nil
}

// brokenHarness is the crash test's harness on a broken store.
func brokenHarness(t *testing.T, kind string) storetest.CrashHarness {
	dir := os.Getenv("POLYLOOP_CRASH_DIR")
	h := storetest.CrashHarness{
		Test:     "TestCrashCatchesBrokenStores",
		Location: func(t *testing.T, sc int) string { return filepath.Join(dir, fmt.Sprintf("broken%d.db", sc)) },
	}
	open := func(path string) (*sqlitestore.Store, error) { return sqlitestore.Open(path, nil) }
	switch kind {
	case "ack-early":
		h.Open = func(path string) (polyloop.Store, error) {
			s, err := open(path)
			return &ackEarly{Store: s}, err
		}
		h.InFlight = func(s polyloop.Store, f func()) {
			sqlitestore.SetAfterInsert(s.(*ackEarly).Store, func(string) { f() })
		}
	case "one-by-one":
		h.Open = func(path string) (polyloop.Store, error) {
			s, err := open(path)
			return &oneByOne{Store: s}, err
		}
		h.InFlight = func(s polyloop.Store, f func()) { s.(*oneByOne).between = f }
	default:
		t.Fatalf("unknown broken store %q", kind)
	}
	return h
}

// TestCrashCatchesBrokenStores runs the crash test, in a child process each,
// on two broken stores — one acknowledges Appends before writing them, one
// writes an Append's records in separate transactions — and checks that it
// fails, counting lost acknowledged records (and so never-replay actions
// executed twice) and records beyond their Append respectively.
func TestCrashCatchesBrokenStores(t *testing.T) {
	if kind := os.Getenv(envBroken); kind != "" {
		storetest.Crash(t, brokenHarness(t, kind))
		return
	}
	if testing.Short() {
		t.Skip("re-executes the test binary; skipped with -short")
	}
	t.Parallel()
	for kind, want := range map[string]string{
		"ack-early":  `acknowledged records lost: [1-9]\d*; never-replay actions executed twice: [1-9]`,
		"one-by-one": `records beyond their Append: [1-9]`,
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashCatchesBrokenStores$", "-test.v", "-crash.kills=30")
		cmd.Env = append(os.Environ(), envBroken+"="+kind, "POLYLOOP_CRASH_DIR="+t.TempDir(), "GORACE=atexit_sleep_ms=0")
		out, err := cmd.CombinedOutput()
		if err == nil || !regexp.MustCompile(want).Match(out) {
			t.Errorf("the crash test on the %s store: %v, and no %q in its output:\n%s", kind, err, want, tail(out))
		}
	}
}

func tail(b []byte) []byte { return b[max(0, len(b)-3000):] }
