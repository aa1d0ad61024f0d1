package pgstore

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/storetest"
)

const (
	// envCrashSchema carries the crash test's schema to its children.
	envCrashSchema = "POLYLOOP_CRASH_SCHEMA"
	// crashChildApp is the application_name of the children's connections.
	crashChildApp = "polyloop_crash_child"
)

// TestCrashKill9Resume runs the shared SIGKILL crash test (storetest.Crash)
// on PostgreSQL, every scenario a run of its own in one schema; an in-flight
// kill lands after the Append's batch was sent, before its result is read.
// The server goes on with a batch whose client died — it may commit after
// the kill — so after each kill the test waits until the dead child's
// backends are gone. More kill points: go test -run TestCrashKill9Resume
// ./pgstore -args -crash.kills=1000.
func TestCrashKill9Resume(t *testing.T) {
	d := dsn(t)
	schema := os.Getenv(envCrashSchema)
	if schema == "" {
		s := openT(t) // the schema, made now and dropped at cleanup
		schema = s.schema
		s.Close()
		t.Setenv(envCrashSchema, schema) // children inherit it
	}
	open := d
	if os.Getenv("POLYLOOP_CRASH_CHILD") != "" {
		open = withApplicationName(d, crashChildApp)
	}
	storetest.Crash(t, storetest.CrashHarness{
		Test:     "TestCrashKill9Resume",
		Location: func(*testing.T, int) string { return schema },
		Open: func(schema string) (polyloop.Store, error) {
			return Open(context.Background(), open, &Options{Schema: schema, MaxConns: 2})
		},
		InFlight: func(s polyloop.Store, f func()) { s.(*Store).afterSend = f },
		Settle:   func(t *testing.T) { waitForNoBackends(t, d, crashChildApp) },
	})
}

// withApplicationName adds application_name to a URL or keyword/value DSN.
func withApplicationName(dsn, name string) string {
	if strings.Contains(dsn, "://") {
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		return dsn + sep + "application_name=" + name
	}
	return dsn + " application_name=" + name
}

// waitForNoBackends waits until no backend serves a connection named app.
func waitForNoBackends(t *testing.T, dsn, app string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d backends of a killed child still run after 30s", n)
		}
	}
}
