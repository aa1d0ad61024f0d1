package sqlitestore_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/storetest"
	"github.com/polyloop/polyloop/sqlitestore"
)

// TestTaskMigration: a file of schema version 3 (no task in its summaries)
// gets the task of every stored run when it is opened.
func TestTaskMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "runs.db")
	s, err := sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é", polyloop.MaxSummaryTask+5)
	for id, task := range map[string]string{"a": "find the needle", "b": long} {
		st := storetest.Started(id, "agent")
		st.Body.(*polyloop.RunStarted).Snapshot.Task.Input = task
		// Written whole, as a store of schema 3 holds them (it kept no
		// shared snapshots).
		if err := polyloop.AppendRecords(ctx, struct{ polyloop.Store }{s}, id, st, storetest.Intent(1, 1)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	// Back to schema 3: without the task column (4), the sweep ledger
	// (5), the records' times (6) and the shared snapshots (7).
	for _, q := range []string{"ALTER TABLE records DROP COLUMN snap", "DROP TABLE snapshots", "ALTER TABLE records DROP COLUMN at", "ALTER TABLE runs DROP COLUMN task", "DROP TABLE sweeps", "DROP TABLE sweep_runs", "DROP TABLE scores", "PRAGMA user_version = 3"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	s, err = sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runs, err := s.ListRuns(ctx, polyloop.RunFilter{TaskContains: "needle"})
	if err != nil || len(runs) != 1 || runs[0].RunID != "a" || runs[0].Task != "find the needle" {
		t.Fatalf("after the migration, runs with needle in their task: %+v, %v", runs, err)
	}
	runs, err = s.ListRuns(ctx, polyloop.RunFilter{TaskContains: "éé"})
	if err != nil || len(runs) != 1 || runs[0].Task != strings.Repeat("é", polyloop.MaxSummaryTask) {
		t.Fatalf("a long task after the migration: %d runs, %v", len(runs), err)
	}
}
