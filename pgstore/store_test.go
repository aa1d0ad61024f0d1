package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/storetest"
	"github.com/polyloop/polyloop/polylooptest"
)

// dsn returns the test database's DSN, or skips the test.
func dsn(t testing.TB) string {
	d := os.Getenv("POLYLOOP_TEST_POSTGRES")
	if d == "" {
		t.Skip("POLYLOOP_TEST_POSTGRES is not set")
	}
	return d
}

// openT opens a store in a fresh schema of its own, dropped at cleanup, so
// that parallel tests and test binaries never see each other's runs.
func openT(t testing.TB) *Store { return openWith(t, Options{}) }

// openWith is openT with options (Schema is replaced).
func openWith(t testing.TB, opts Options) *Store {
	t.Helper()
	d := dsn(t)
	var b [6]byte
	rand.Read(b[:])
	schema := "plt_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	opts.Schema = schema
	s, err := Open(ctx, d, &opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		s.Close()
		dropSchema(t, d, schema)
	})
	return s
}

// dropSchema drops a test schema over a connection of its own (the store's
// pool may be closed by then).
func dropSchema(t testing.TB, dsn, schema string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Errorf("dropping schema %s: %v", schema, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		t.Errorf("dropping schema %s: %v", schema, err)
	}
}

// TestStoreExtraChecks runs the store checks polylooptest.TestStore lacks
// (TestStoreContract runs the kit).
func TestStoreExtraChecks(t *testing.T) {
	dsn(t)
	storetest.Run(t, func(t *testing.T) polyloop.Store { return openT(t) })
}

func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	s := openT(t)
	if _, err := s.pool.Exec(ctx, "UPDATE "+pgx.Identifier{s.schema}.Sanitize()+".schema_version SET version = 99"); err != nil {
		t.Fatal(err)
	}
	_, err := Open(ctx, dsn(t), &Options{Schema: s.schema})
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open of a newer schema: %v, want ErrSchemaTooNew", err)
	}
}

// TestConcurrentOpen: Opens racing on a new schema migrate it once.
func TestConcurrentOpen(t *testing.T) {
	ctx := context.Background()
	s := openT(t)
	if _, err := s.pool.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{s.schema}.Sanitize()+" CASCADE"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			s2, err := Open(ctx, dsn(t), &Options{Schema: s.schema, MaxConns: 2})
			if err != nil {
				t.Errorf("concurrent Open: %v", err)
				return
			}
			s2.Close()
		})
	}
	wg.Wait()
	log := storetest.Prefix("r", 2)
	if err := polyloop.AppendRecords(ctx, s, "r", log...); err != nil {
		t.Fatal(err)
	}
}

// TestConnectionLostMidAppend kills the connection's backend after the
// run's summary is read: Append fails with an error that is not a conflict,
// nothing is written, and the next Append (on a new connection) works.
func TestConnectionLostMidAppend(t *testing.T) {
	ctx := context.Background()
	s := openT(t)
	log := storetest.Prefix("r", 4)
	if err := polyloop.AppendRecords(ctx, s, "r", log[:2]...); err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	s.afterRead = func(ctx context.Context, conn *pgx.Conn) error {
		_, err := admin.Exec(ctx, "SELECT pg_terminate_backend($1)", conn.PgConn().PID())
		return err
	}
	err = polyloop.AppendRecords(ctx, s, "r", log[2:4]...)
	s.afterRead = nil
	if err == nil || errors.Is(err, polyloop.ErrSeqConflict) {
		t.Fatalf("Append on a lost connection: %v, want a non-conflict error", err)
	}
	t.Logf("lost connection: %v", err)
	storetest.SameLog(t, storetest.ReadAll(t, ctx, s, "r"), log[:2])
	if err := polyloop.AppendRecords(ctx, s, "r", log[2:4]...); err != nil {
		t.Fatalf("Append after the lost connection: %v", err)
	}
	storetest.SameLog(t, storetest.ReadAll(t, ctx, s, "r"), log)
}

// TestTwoStoresFence: two Stores (two pools) race for the same seqs;
// exactly one wins each time.
func TestTwoStoresFence(t *testing.T) {
	ctx := context.Background()
	s1 := openT(t)
	s2, err := Open(ctx, dsn(t), &Options{Schema: s1.schema})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	storetest.Fence(t, ctx, s1, s2, "r", storetest.Prefix("r", 20))
	st := s1.Stats()
	st2 := s2.Stats()
	if st.Appends+st2.Appends != 10 || st.Conflicts+st2.Conflicts != 10 || st.Commits != st.Appends {
		t.Fatalf("stats %+v and %+v, want 10 appends and 10 conflicts in all", st, st2)
	}
}

// TestConcurrentRuns: 64 runs append at once through one Store, whose pool
// has 32 connections (the shared test server allows 100 in all); a stale
// writer's Append fails only itself, and the runs share commits (group
// commit). Run with -race.
func TestConcurrentRuns(t *testing.T) {
	ctx := context.Background()
	s := openWith(t, Options{MaxConns: 32})
	const runs, steps = 64, 5
	storetest.ConcurrentRuns(t, ctx, s, "run", runs, steps)
	st := s.Stats()
	appends := int64(runs * (1 + 2*steps))
	if st.Appends != appends || st.Conflicts != runs {
		t.Fatalf("stats %+v, want %d appends, %d conflicts", st, appends, runs)
	}
	if st.Commits < 1 || st.Commits >= st.Appends {
		t.Fatalf("%d commits for %d appends: no group commit", st.Commits, st.Appends)
	}
	t.Logf("%d appends in %d commits", st.Appends, st.Commits)
}

// TestContractUnderLinguisticCollation runs the contract kit on stores
// whose run ids have a linguistic collation: ListRuns must still order
// them byte by byte (ICU's root locale would put "_under" before "apple"
// before "Banana"; the kit's ListRunsOrder check has such ids), and runs
// must stay apart.
func TestContractUnderLinguisticCollation(t *testing.T) {
	ctx := context.Background()
	var icu bool
	if err := openT(t).pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_collation WHERE collname = 'und-x-icu')`).Scan(&icu); err != nil {
		t.Fatal(err)
	}
	if !icu {
		t.Skip("the server has no ICU collations")
	}
	polylooptest.TestStore(t, polylooptest.StoreHarness{New: func(t testing.TB) polyloop.Store {
		s := openT(t)
		runs := pgx.Identifier{s.schema, "runs"}.Sanitize()
		if _, err := s.pool.Exec(ctx, `ALTER TABLE `+runs+` ALTER COLUMN run_id TYPE text COLLATE "und-x-icu"`); err != nil {
			t.Fatal(err)
		}
		return s
	}})
}

func TestInterpretError(t *testing.T) {
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	plain := fmt.Errorf("boom")
	if err := interpretError(ctx, "op", plain); errors.Is(err, polyloop.ErrSeqConflict) || !errors.Is(err, plain) {
		t.Errorf("plain error: %v", err)
	}
	if err := interpretError(cancelled, "op", plain); !errors.Is(err, context.Canceled) || !errors.Is(err, plain) {
		t.Errorf("error under a cancelled context: %v, want both context.Canceled and the cause", err)
	}
	if interpretError(ctx, "op", nil) != nil {
		t.Error("nil error became non-nil")
	}
}
