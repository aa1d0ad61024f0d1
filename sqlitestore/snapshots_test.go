package sqlitestore_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/storetest"
	"github.com/polyloop/polyloop/sqlitestore"
)

// The store keeps each configuration snapshot once (design record 0045).
func TestSnapshotsStoredOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.db")
	s := open(t, path)
	storetest.SnapshotsOnce(t, s, func(t *testing.T) int {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM snapshots`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	})
}

// A file of schema 7 (before shared snapshots: whole rows only) still
// opens read-only, without a migration, and reads.
func TestReadOnlySchema7(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "runs.db")
	w := open(t, path)
	if err := polyloop.AppendRecords(ctx, struct{ polyloop.Store }{w}, "r1", storetest.Prefix("r1", 3)...); err != nil {
		t.Fatal(err)
	}
	w.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"ALTER TABLE records DROP COLUMN snap", "DROP TABLE snapshots", "PRAGMA user_version = 7"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	r, err := sqlitestore.Open(path, &sqlitestore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	log, err := polyloop.ReadLog(ctx, r, "r1")
	if err != nil || len(log.Records) != 3 {
		t.Fatalf("ReadLog of a schema-7 file, read only: %d records, %v", len(log.Records), err)
	}
	if err := polyloop.AppendRecords(ctx, r, "r2", storetest.Prefix("r2", 2)...); err == nil {
		t.Error("Append on a read-only store of schema 7 succeeded")
	}
}
