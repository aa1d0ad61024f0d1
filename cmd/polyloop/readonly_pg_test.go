package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/polyloop/polyloop/pgstore"
	"github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/sweep/sweepview"
	"github.com/polyloop/polyloop/view"
)

// TestPostgresReadOnlyRole: the commands that only read — ls, show,
// export, verify, stats, samples, the viewer — work as a role that may only
// SELECT (they open without migrating and write nothing); a schema that
// needs a migration, or none at all, is refused by them saying so.
func TestPostgresReadOnlyRole(t *testing.T) {
	base := os.Getenv("POLYLOOP_TEST_POSTGRES")
	if base == "" {
		t.Skip("POLYLOOP_TEST_POSTGRES is not set")
	}
	t.Parallel()
	ctx := context.Background()
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	db, role := "polyloop_ro_"+suffix, "polyloop_reader_"+suffix
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	for _, q := range []string{"CREATE DATABASE " + db, "CREATE ROLE " + role + " LOGIN PASSWORD 'reader'"} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		admin, err := pgx.Connect(ctx, base)
		if err != nil {
			return
		}
		defer admin.Close(ctx)
		admin.Exec(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
		admin.Exec(ctx, "DROP ROLE IF EXISTS "+role)
	})
	u, _ := url.Parse(base)
	u.Path = "/" + db
	ownerDSN := u.String()
	u.User = url.UserPassword(role, "reader")
	readerDSN := u.String()

	// Nothing there yet: no runs, as a SQLite store not created yet.
	c := newCLI(t, readerDSN)
	if code, _, stderr := c.run("ls"); code != exitOK || !strings.Contains(stderr, "no runs yet: the polyloop schema of postgres://") || strings.Contains(stderr, "reader@") {
		t.Errorf("ls on an empty database: exit %d\n%s", code, stderr)
	}

	owner := newCLI(t, ownerDSN)
	owner.dir = c.dir
	c.write("slow.yaml", slowAgent)
	c.write("quick.yaml", quickAgent)
	c.write("sweep.yaml", "name: ro\nagents: [quick.yaml]\ntasks: tasks.csv\nscorers: [{kind: exact}]\n")
	c.write("tasks.csv", "id,input,target\nq1,what is 1+4?,5\n")
	if code, _, stderr := owner.run("run", "quick.yaml", "what is 2+3?", "--id", "r1"); code != exitOK {
		t.Fatalf("run: %s", stderr)
	}
	if code, _, stderr := owner.run("sweep", "sweep.yaml", "-q"); code != exitOK {
		t.Fatalf("sweep: %s", stderr)
	}
	oconn, err := pgx.Connect(ctx, ownerDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer oconn.Close(ctx)
	for _, q := range []string{"GRANT CONNECT ON DATABASE " + db + " TO " + role, "GRANT USAGE ON SCHEMA polyloop TO " + role,
		"GRANT SELECT ON ALL TABLES IN SCHEMA polyloop TO " + role} {
		if _, err := oconn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	// The role may not write: a command that writes fails.
	if code, _, _ := c.run("run", "quick.yaml", "what is 2+3?", "--id", "r2"); code == exitOK {
		t.Fatal("the read-only role could write a run: the test proves nothing")
	}
	for _, args := range [][]string{{"ls"}, {"show", "r1"}, {"export", "r1"}, {"verify", "r1"}, {"stats"},
		{"samples", "--sweep", "ro"}, {"stats", "--sweep", "ro"}} {
		code, stdout, stderr := c.run(args...)
		if code != exitOK || stdout == "" {
			t.Errorf("%v as a role that may only SELECT: exit %d\n%s\n%s", args, code, stdout, stderr)
		}
	}
	st, err := openStore(ctx, readerDSN, readOnlyStore)
	if err != nil {
		t.Fatalf("the viewer's store as a role that may only SELECT: %v", err)
	}
	srv, err := view.New(view.Options{Store: st, Sweeps: sweepview.New(st.(sweep.Store))})
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"/", "/run?id=r1", "/stats", "/sweeps", "/sweep?name=ro"} {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+target, nil))
		if rec.Code != http.StatusOK {
			t.Errorf("view %s as a role that may only SELECT: %d\n%.500s", target, rec.Code, rec.Body)
		}
	}
	st.Close()

	// A schema one version behind: refused, saying what to do.
	if _, err := oconn.Exec(ctx, "UPDATE polyloop.schema_version SET version = $1", pgstore.SchemaVersion-1); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := c.run("ls")
	if code != exitError || !strings.Contains(stderr, "needs a schema migration, which a command that only reads does not do") ||
		!strings.Contains(stderr, "version "+strconv.Itoa(pgstore.SchemaVersion-1)) || strings.Contains(stderr, "reader@") {
		t.Errorf("ls on a schema to migrate: exit %d\n%s", code, stderr)
	}
}
