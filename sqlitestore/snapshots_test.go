package sqlitestore_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/polyloop/polyloop/internal/storetest"
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
