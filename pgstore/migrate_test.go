package pgstore

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/polyloop/polyloop/internal/sqlrows"
	"github.com/polyloop/polyloop/internal/storetest"
)

// TestLegacySchemaReads: a schema of version 3 (before checksums) holding
// storetest.LegacyLog, as that version wrote it, is migrated by Open; its
// records read unchecked and are counted, new records get checksums.
func TestLegacySchemaReads(t *testing.T) {
	ctx := context.Background()
	fresh := openT(t) // a schema of its own, dropped at cleanup
	schema := fresh.schema
	quoted := pgx.Identifier{schema}.Sanitize()
	fresh.Close()
	conn, err := pgx.Connect(ctx, dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := conn.Exec(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`DROP SCHEMA ` + quoted + ` CASCADE`)
	exec(`CREATE SCHEMA ` + quoted)
	exec(`CREATE TABLE ` + quoted + `.schema_version (one boolean PRIMARY KEY DEFAULT true CHECK (one), version integer NOT NULL)`)
	for _, m := range migrations[:3] {
		exec(strings.ReplaceAll(m, "{s}", quoted))
	}
	exec(`INSERT INTO ` + quoted + `.schema_version (version) VALUES (3)`)
	recs, data, sum := storetest.LegacyLog(t)
	for i, r := range recs {
		exec(`INSERT INTO `+quoted+`.records (run_id, seq, kind, data) VALUES ($1, $2, $3, $4)`, storetest.LegacyRun, r.Seq, string(r.Kind()), data[i])
	}
	args, err := sqlrows.SummaryArgs(sum)
	if err != nil {
		t.Fatal(err)
	}
	// Schemas before 5 have no task column in the summaries.
	exec(`INSERT INTO `+quoted+`.runs (`+strings.TrimSuffix(sqlrows.SummaryColumns, ", task")+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, args[:len(args)-1]...)

	s, err := Open(ctx, dsn(t), &Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.CheckLegacy(t, s, rawSchema{s})
}
