package main

import (
	"bytes"
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/polyloop/polyloop/sweepqueue"
)

// Worker flags that would make a worker that cannot work are refused
// before anything connects, each with the flag it is about.
func TestWorkerRefusesFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--concurrency", "0"}, "--concurrency 0"},
		{[]string{"--concurrency", "-2"}, "--concurrency -2"},
		{[]string{"--fail-attempts", "0"}, "--fail-attempts 0"},
		{[]string{"--slice", "0s"}, "--slice 0s"},
		{[]string{"--slice", "5m"}, "--job-timeout 5m0s must exceed --slice 5m0s"},
		{[]string{"--slice", "1m", "--job-timeout", "30s"}, "--job-timeout 30s must exceed --slice 1m0s"},
		{[]string{"--job-timeout", "5m", "--rescue-after", "5m"}, "--rescue-after 5m0s must exceed --job-timeout 5m0s"},
		{[]string{"--held-delay", "0s"}, "--held-delay 0s"},
		{nil, "--queue \"mysql://x\": expected a postgres:// DSN"},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"worker", "--queue", "mysql://x"}, c.args...)
		if c.args != nil {
			args[2] = "postgres://nobody@127.0.0.1:1/none" // never reached
		}
		code := execute(args, nil, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("worker %v: exit %d, %q; want exit 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
}

// sweep --queue with a DSN that is not PostgreSQL's is refused before the
// sweep file is read (here: a file that does not exist).
func TestSweepQueueChecksDSNFirst(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := execute([]string{"sweep", filepath.Join(t.TempDir(), "absent.yaml"), "--queue", "sqlite:q.db"}, nil, &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "--queue \"sqlite:q.db\": expected a postgres:// DSN") || strings.Contains(stderr.String(), "absent.yaml") {
		t.Fatalf("exit %d, %q; want the DSN refused, not the file", code, stderr.String())
	}
}

// A queue DSN naming a database that does not exist: the error names
// --queue. polyloop workers on a database without a queue says so and
// writes nothing: no schema appears.
func TestQueueDSNErrors(t *testing.T) {
	base := os.Getenv("POLYLOOP_TEST_POSTGRES")
	if base == "" {
		t.Skip("POLYLOOP_TEST_POSTGRES is not set")
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/polyloop_no_such_database"
	for _, cmd := range []string{"worker", "workers"} {
		var stdout, stderr bytes.Buffer
		code := execute([]string{cmd, "--queue", u.String()}, nil, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "--queue postgres://") {
			t.Errorf("%s --queue of a missing database: exit %d, %q; want the error to name --queue", cmd, code, stderr.String())
		}
	}

	dsn := fleetDatabase(t) // an empty database
	var stdout, stderr bytes.Buffer
	code := execute([]string{"workers", "--queue", dsn}, nil, &stdout, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "no queue at DSN (no polyloop_river schema): run polyloop sweep --queue first") {
		t.Fatalf("workers on an empty database: exit %d, %q", code, stderr.String())
	}
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var schemas int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM information_schema.schemata WHERE schema_name IN ('polyloop', 'polyloop_river')`).Scan(&schemas); err != nil {
		t.Fatal(err)
	}
	if schemas != 0 {
		t.Fatalf("polyloop workers created %d schemas: it must write nothing", schemas)
	}
}

// polyloop workers says how many jobs it leaves out of its lists.
func TestQueueStatusSaysWhatIsLeftOut(t *testing.T) {
	st := &sweepqueue.Status{Schema: "polyloop_river", States: map[string]int{"running": 3, "cancelled": 4},
		Workers:          []sweepqueue.WorkerJobs{{Worker: "w1", Jobs: []sweepqueue.Job{{ID: 1, RunID: "r1", Attempt: 1}}}},
		RunningNotListed: 2,
		Cancelled:        []sweepqueue.Job{{ID: 5, RunID: "r5", Attempt: 1, Error: "changed"}}}
	var b bytes.Buffer
	writeQueueStatus(&b, st)
	for _, want := range []string{"and 2 more running jobs, not listed", "cancelled (for a person): 4 (the oldest 1 listed)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
}
