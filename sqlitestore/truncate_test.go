package sqlitestore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/storetest"
	"github.com/polyloop/polyloop/internal/workload"
	"github.com/polyloop/polyloop/sqlitestore"
)

// truncatedRuns is how many runs of W (30 steps) the truncated files hold.
const truncatedRuns = 8

// fullFile writes truncatedRuns runs of W to a file, closes it (which
// checkpoints the write-ahead log into the file) and returns its bytes.
func fullFile(t *testing.T) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "full.db")
	s, err := sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := workload.W{Steps: 30}
	for i := range truncatedRuns {
		if err := storetest.RunW(context.Background(), w, w.Runner(s), fmt.Sprintf("run%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		t.Fatal("the write-ahead log outlived Close: the file is not complete")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTruncatedFile cuts a store file short at several lengths: Open
// refuses it with ErrDamaged (so nothing can write to it), and OpenSalvage
// reads every run up to the damage, reporting each damaged run as a corrupt
// log naming the run and the record where reading stopped, without a panic
// and without changing the file.
func TestTruncatedFile(t *testing.T) {
	t.Parallel()
	full := fullFile(t)
	for _, n := range []int{len(full) * 3 / 4, len(full) / 2, len(full) / 4, 4096} {
		t.Run(fmt.Sprintf("%d_of_%d_bytes", n, len(full)), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cut.db")
			if err := os.WriteFile(path, full[:n], 0o644); err != nil {
				t.Fatal(err)
			}
			if s, err := sqlitestore.Open(path, nil); !errors.Is(err, sqlitestore.ErrDamaged) {
				if err == nil {
					s.Close()
				}
				t.Fatalf("Open of a truncated file: %v, want ErrDamaged", err)
			}
			checkSalvage(t, path)
			if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, full[:n]) {
				t.Fatalf("the truncated file was changed (%v)", err)
			}
		})
	}
}

func checkSalvage(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	sv, err := sqlitestore.OpenSalvage(path)
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	ids, err := sv.RunIDs(ctx)
	t.Logf("%d runs listed (%v)", len(ids), err)
	ok, corrupt := 0, 0
	for i := range truncatedRuns {
		id := fmt.Sprintf("run%d", i)
		l, err := polyloop.ReadLog(ctx, sv, id)
		var ce *polyloop.CorruptLogError
		switch {
		case err == nil && len(l.Records) == int(workload.W{Steps: 30}.RecordsPerRun()):
			ok++
		case errors.As(err, &ce) && ce.RunID == id && strings.Contains(ce.Reason, "damaged from record"):
			corrupt++
			t.Logf("%s: %v", id, err)
		default:
			t.Errorf("%s in a truncated file: %d records, %v; want the whole log or a corrupt log naming the run and the record", id, len(l.Records), err)
		}
	}
	if corrupt == 0 {
		t.Errorf("no run of a file cut short was reported damaged (%d ok)", ok)
	}
}
