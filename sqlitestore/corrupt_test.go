package sqlitestore_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/sqlrows"
	"github.com/polyloop/polyloop/internal/storetest"
)

// rawFile is raw access to a store file's records table, over a connection
// of its own.
type rawFile struct{ db *sql.DB }

func openRaw(t testing.TB, path string) rawFile {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return rawFile{db}
}

func (f rawFile) Rows(t testing.TB, runID string) []polyloop.Row {
	t.Helper()
	rows, err := f.db.Query(`SELECT seq, kind, data, crc FROM records WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []polyloop.Row
	for rows.Next() {
		r, err := sqlrows.ScanRecord(rows)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func (f rawFile) Put(t testing.TB, runID string, r polyloop.Row) {
	t.Helper()
	if _, err := f.db.Exec(`INSERT INTO records (run_id, seq, kind, data, crc) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (run_id, seq) DO UPDATE SET kind = excluded.kind, data = excluded.data, crc = excluded.crc`,
		runID, r.Seq, r.Kind, r.Data, crcArg(r)); err != nil {
		t.Fatal(err)
	}
}

func (f rawFile) Delete(t testing.TB, runID string, seq int64) {
	t.Helper()
	if _, err := f.db.Exec(`DELETE FROM records WHERE run_id = ? AND seq = ?`, runID, seq); err != nil {
		t.Fatal(err)
	}
}

// TestCorruption runs the shared corruption checks on a store file.
func TestCorruption(t *testing.T) {
	storetest.Corruption(t, func(t *testing.T) (polyloop.Store, storetest.Tamper) {
		path := filepath.Join(t.TempDir(), "runs.db")
		return open(t, path), openRaw(t, path)
	})
}

// crcArg is the crc column's value for r: NULL for a row without checksum.
func crcArg(r polyloop.Row) any {
	if r.Unchecked {
		return nil
	}
	return sqlrows.CRC(r)
}
