package sqlitestore_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/storetest"
	"github.com/polyloop/polyloop/sqlitestore"
)

// TestNewStoreIsPrivate: the file Open creates, its write-ahead log and
// shared-memory files, and the lease files are readable by their owner
// only (conversations and observations are in them).
func TestNewStoreIsPrivate(t *testing.T) {
	defer syscall.Umask(syscall.Umask(0o022))
	path := filepath.Join(t.TempDir(), "runs.db")
	s := open(t, path)
	ctx := context.Background()
	if err := polyloop.AppendRecords(ctx, s, "r1", storetest.Prefix("r1", 3)...); err != nil {
		t.Fatal(err)
	}
	l, err := s.AcquireLease(ctx, "r1", polyloop.LeaseRequest{Owner: polyloop.LeaseOwner{Token: "t"}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	leases, _ := filepath.Glob(path + ".leases/*")
	if runs, err := os.Stat(path + ".leases/.runs"); err == nil && !runs.IsDir() { // the lease file (Linux)
		leases = append(leases, path+".leases/.runs")
	}
	for _, p := range append([]string{path, path + "-wal", path + "-shm"}, leases...) {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", p, st.Mode().Perm())
		}
	}
	if st, err := os.Stat(path + ".leases"); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("lease directory: %v, %v; want mode 0700", st, err)
	}
}

// TestReadOnlyOpenWritesNothing: a store opened ReadOnly reads the runs,
// refuses appends, and leaves the file as it was, even one that needs a
// migration (which it reports with ErrNeedsMigration).
func TestReadOnlyOpenWritesNothing(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "runs.db")
	w := open(t, path)
	if err := polyloop.AppendRecords(ctx, w, "r1", storetest.Prefix("r1", 3)...); err != nil {
		t.Fatal(err)
	}
	w.Close()
	before := fileBytes(t, path)

	r, err := sqlitestore.Open(path, &sqlitestore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	log, err := polyloop.ReadLog(ctx, r, "r1")
	if err != nil || len(log.Records) != 3 {
		t.Fatalf("ReadLog: %d records, %v", len(log.Records), err)
	}
	if err := polyloop.AppendRecords(ctx, r, "r1", storetest.Prefix("r1", 4)[3:]...); err == nil {
		t.Error("Append on a read-only store succeeded")
	}
	r.Close()
	if string(fileBytes(t, path)) != string(before) {
		t.Error("a read-only open changed the file")
	}

	if _, err := sqlitestore.Open(filepath.Join(t.TempDir(), "none.db"), &sqlitestore.Options{ReadOnly: true}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read-only open of a missing file: %v, want fs.ErrNotExist", err)
	}

	legacy := legacyFile(t)
	before = fileBytes(t, legacy)
	_, err = sqlitestore.Open(legacy, &sqlitestore.Options{ReadOnly: true})
	if !errors.Is(err, sqlitestore.ErrNeedsMigration) {
		t.Errorf("read-only open of a schema-1 file: %v, want ErrNeedsMigration", err)
	}
	if string(fileBytes(t, legacy)) != string(before) {
		t.Error("a read-only open of an old file changed it")
	}
}

func fileBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
