package pgstore

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/storetest"
)

// TestTaskMigration: a schema of version 2 (no task in its summaries) gets
// the task of every stored run when it is opened.
func TestTaskMigration(t *testing.T) {
	ctx := context.Background()
	s := openT(t)
	long := strings.Repeat("é", polyloop.MaxSummaryTask+5)
	for id, task := range map[string]string{"a": "find the needle", "b": long} {
		st := storetest.Started(id, "agent")
		st.Body.(*polyloop.RunStarted).Snapshot.Task.Input = task
		// Written whole, as a store of schema 5 holds them (it kept no
		// shared snapshots).
		if err := polyloop.AppendRecords(ctx, struct{ polyloop.Store }{s}, id, st, storetest.Intent(1, 1)); err != nil {
			t.Fatal(err)
		}
	}
	q := pgx.Identifier{s.schema}.Sanitize()
	// Back to schema 5: without the task column (6), the sweep ledger
	// (7), the scorers' errors (9) and the shared snapshots (10).
	for _, stmt := range []string{"ALTER TABLE " + q + ".records DROP COLUMN snap", "DROP TABLE " + q + ".snapshots", "ALTER TABLE " + q + ".runs DROP COLUMN task", "DROP TABLE " + q + ".sweeps, " + q + ".sweep_runs, " + q + ".scores",
		"UPDATE " + q + ".schema_version SET version = 5"} {
		if _, err := s.pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	s2, err := Open(ctx, dsn(t), &Options{Schema: s.schema})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	runs, err := s2.ListRuns(ctx, polyloop.RunFilter{TaskContains: "needle"})
	if err != nil || len(runs) != 1 || runs[0].RunID != "a" || runs[0].Task != "find the needle" {
		t.Fatalf("after the migration, runs with needle in their task: %+v, %v", runs, err)
	}
	runs, err = s2.ListRuns(ctx, polyloop.RunFilter{TaskContains: "éé"})
	if err != nil || len(runs) != 1 || runs[0].Task != strings.Repeat("é", polyloop.MaxSummaryTask) {
		t.Fatalf("a long task after the migration: %d runs, %v", len(runs), err)
	}
}
