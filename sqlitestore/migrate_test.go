package sqlitestore_test

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polyloop/polyloop/internal/sqlrows"
	"github.com/polyloop/polyloop/internal/storetest"
	"github.com/polyloop/polyloop/sqlitestore"
)

// legacyFile writes a file of schema version 1 (before checksums) holding
// storetest.LegacyLog, as that version wrote it.
func legacyFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "v1.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	recs, data, sum := storetest.LegacyLog(t)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(sqlitestore.Migration(0))
	for i, r := range recs {
		exec(`INSERT INTO records (run_id, seq, kind, data) VALUES (?, ?, ?, ?)`, storetest.LegacyRun, r.Seq, string(r.Kind()), data[i])
	}
	args, err := sqlrows.SummaryArgs(sum)
	if err != nil {
		t.Fatal(err)
	}
	// Schema 1's summaries have no task column (schema 3 adds it).
	exec(`INSERT INTO runs (`+strings.TrimSuffix(sqlrows.SummaryColumns, ", task")+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args[:len(args)-1]...)
	exec(`PRAGMA user_version = 1`)
	return path
}

// TestLegacyFileReads: a file written before checksums is migrated by Open,
// its records read unchecked and counted, new records get checksums.
func TestLegacyFileReads(t *testing.T) {
	path := legacyFile(t)
	s := open(t, path)
	storetest.CheckLegacy(t, s, openRaw(t, path))
}
