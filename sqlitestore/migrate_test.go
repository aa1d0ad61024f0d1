package sqlitestore_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/sqlrows"
	"github.com/polyloop/polyloop/internal/storetest"
	"github.com/polyloop/polyloop/internal/workload"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/polylooptest"
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

// TestSchema5FileResumes opens a copy of testdata/v5.db, written by the
// store at schema version 5 (records without times): a finished run of
// workload W (S=3) and one interrupted after its fifth Append. Open migrates
// it in place; both logs read as an uninterrupted run's, the listing folds
// them (the time of a log whose tail has none from the runs row), and the
// interrupted run resumes to the end.
func TestSchema5FileResumes(t *testing.T) {
	ctx := context.Background()
	src, err := os.ReadFile(filepath.Join("testdata", "v5.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "v5.db")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	s := open(t, path)
	raw := openRaw(t, path)
	var version int
	var ddl string
	if err := raw.db.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	if err := raw.db.QueryRow(`SELECT sql FROM sqlite_schema WHERE name = 'records'`).Scan(&ddl); err != nil {
		t.Fatal(err)
	}
	if version != sqlitestore.SchemaVersion || !strings.Contains(ddl, "at INTEGER") {
		t.Fatalf("after Open: schema version %d, records %q; want %d and the at column", version, ddl, sqlitestore.SchemaVersion)
	}
	w := workload.W{Steps: 3}
	ref := memstore.New()
	for _, run := range []string{"v5-finished", "v5-interrupted"} {
		if err := storetest.RunW(ctx, w, w.Runner(ref), run); err != nil {
			t.Fatal(err)
		}
	}
	same := func(run string, prefix int) {
		t.Helper()
		want := storetest.ReadAll(t, ctx, ref, run)
		got := storetest.ReadAll(t, ctx, s, run)
		if prefix > 0 {
			want = want[:prefix]
		}
		if err := polylooptest.CheckEquivalent(polyloop.RunLog{Records: got}, polyloop.RunLog{Records: want}); err != nil {
			t.Fatalf("run %s: %v", run, err)
		}
	}
	same("v5-finished", 0)
	interrupted := storetest.ReadAll(t, ctx, s, "v5-interrupted")
	if len(interrupted) != 10 {
		t.Fatalf("interrupted run holds %d records, want the 10 of its first five Appends", len(interrupted))
	}
	same("v5-interrupted", len(interrupted))
	res, err := w.Runner(s).Resume(ctx, "v5-interrupted", w.Agent())
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if err := w.Check(res); err != nil {
		t.Fatal(err)
	}
	same("v5-interrupted", 0)
	sums, err := s.ListRuns(ctx, polyloop.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 2 {
		t.Fatalf("ListRuns: %d runs, want 2", len(sums))
	}
	for _, sum := range sums {
		want := polyloop.RunSummary{RunID: sum.RunID}
		for _, r := range storetest.ReadAll(t, ctx, s, sum.RunID) {
			want.Apply(r)
		}
		if !sum.Finished || sum.Records != want.Records || !sum.StartedAt.Equal(want.StartedAt) || !sum.UpdatedAt.Equal(want.UpdatedAt) || sum.Agent != want.Agent || sum.Task != want.Task {
			t.Errorf("summary of %s: %+v, want %+v", sum.RunID, sum, want)
		}
	}
}
