package sqlitestore_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/storetest"
	"github.com/polyloop/polyloop/sqlitestore"
)

func open(t testing.TB, path string) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func newStore(t testing.TB) *sqlitestore.Store {
	return open(t, filepath.Join(t.TempDir(), "runs.db"))
}

// TestStoreExtraChecks runs the store checks polylooptest.TestStore lacks
// (TestStoreContract runs the kit).
func TestStoreExtraChecks(t *testing.T) {
	storetest.Run(t, func(t *testing.T) polyloop.Store { return newStore(t) })
}

func TestReopenKeepsLogs(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "runs.db")
	s, err := sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	log := storetest.Prefix("r", 6)
	if err := polyloop.AppendRecords(ctx, s, "r", log[:2]...); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := polyloop.AppendRecords(ctx, s, "r", log[2:4]...); !errors.Is(err, sqlitestore.ErrClosed) {
		t.Fatalf("Append after Close: %v, want ErrClosed", err)
	}
	if _, err := polyloop.ReadLog(ctx, s, "r"); !errors.Is(err, sqlitestore.ErrClosed) {
		t.Fatalf("ReadLog after Close: %v, want ErrClosed", err)
	}
	s2 := open(t, path)
	if err := polyloop.AppendRecords(ctx, s2, "r", log[2:6]...); err != nil {
		t.Fatal(err)
	}
	storetest.SameLog(t, storetest.ReadAll(t, ctx, s2, "r"), log)
}

func TestNewerSchemaRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.db")
	s, err := sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = sqlitestore.Open(path, nil)
	if !errors.Is(err, sqlitestore.ErrSchemaTooNew) {
		t.Fatalf("Open of a newer schema: %v, want ErrSchemaTooNew", err)
	}
}

func TestBadPath(t *testing.T) {
	for _, p := range []string{"", ":memory:", "a?b", "file:x.db"} {
		if s, err := sqlitestore.Open(p, nil); err == nil {
			s.Close()
			t.Errorf("Open(%q) succeeded, want an error", p)
		}
	}
}

// TestTwoHandlesFence: two Stores on one file race for the same seqs;
// exactly one wins each time.
func TestTwoHandlesFence(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "runs.db")
	s1, s2 := open(t, path), open(t, path)
	storetest.Fence(t, ctx, s1, s2, "r", storetest.Prefix("r", 20))
}

// TestRacingHandles: two handles on one file append the same runs at
// once; every losing Append fails with ErrSeqConflict.
func TestRacingHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.db")
	s1, s2 := open(t, path), open(t, path)
	storetest.RacingWriters(t, context.Background(), []polyloop.Store{s1, s2}, 20, 2, 40)
}

// TestCancelledAppendWritesNothing: this store never writes an Append whose
// context was done before it was queued.
func TestCancelledAppendWritesNothing(t *testing.T) {
	s := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := polyloop.AppendRecords(ctx, s, "r", storetest.Prefix("r", 2)...)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Append: %v, want context.Canceled", err)
	}
	if got := storetest.ReadAll(t, context.Background(), s, "r"); len(got) != 0 {
		t.Fatalf("cancelled Append wrote %d records", len(got))
	}
}
