package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/polyloop/polyloop/sweepqueue"
)

// The worker benchmark with kills (issue 36): how long a run whose worker
// was killed waits before it runs again. Two worker processes (this test
// binary as polyloop worker, benchConcurrency jobs each, slices of
// rescueSlice, rescued rescueAfter after a job's start) take a sweep of
// rescueRuns runs of rescueSteps noop actions and an answer (benchLatency a
// model call: half a second a run), enough for the surviving worker to have
// new runs waiting long after the rescue. Once both workers have run jobs
// for rescueKillAfter, the first is killed with SIGKILL; the jobs it held
// are rescued by River (its rescuer runs every 30 s) and run again by the
// survivor. For each job the killed worker held (River's attempted_by
// names it): the time of its first rescue after the kill (the rescuer's
// error entry in River's table) and the start of the survivor's first
// execution of it after that (from the survivor's --json lines: the
// execution's end less its duration). Reported, in seconds:
// the medians from the kill to the rescue and to the pickup, the largest
// pickup, and the median and largest wait from rescue to pickup, which
// design 0043 bounds by one slice plus River's scheduler interval (5 s)
// and its first retry backoff (1 s). docs/performance.md has the figures.
//
//	go test -run '^$' -bench WorkerRescue -benchtime 1x ./cmd/polyloop
const (
	rescueRuns      = 1000
	rescueSteps     = 9
	rescueSlice     = 5 * time.Second
	rescueAfter     = 7 * time.Second
	rescueKillAfter = 3 * time.Second
)

// rescued is one job the killed worker held.
type rescued struct{ rescue, pickup time.Time }

func BenchmarkWorkerRescue(b *testing.B) {
	dsn, store, q := benchQueue(b)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	flags := fmt.Sprintf("%s=--slice %s --job-timeout %s --rescue-after %s --json", benchFlagsEnv, rescueSlice, rescueAfter-time.Second, rescueAfter)
	var toRescue, toPickup, waits []time.Duration
	for i := range b.N {
		children := startWorkers(b, dsn, 2, flags)
		s, err := benchSweepOf(fmt.Sprintf("rescue%d", i), rescueRuns, rescueSteps)
		if err != nil {
			b.Fatal(err)
		}
		if res, err := q.Enqueue(ctx, s, store); err != nil || res.Inserted != rescueRuns {
			b.Fatalf("Enqueue = %+v, %v", res, err)
		}
		time.Sleep(rescueKillAfter)
		children[0].cmd.Process.Signal(syscall.SIGKILL)
		<-children[0].done
		killed := time.Now()
		for deadline := time.Now().Add(20 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
			st, err := q.Status(ctx, sweepqueue.StatusOptions{Sweep: s.Name()})
			if err != nil {
				b.Fatal(err)
			}
			if st.Pending() == 0 {
				if st.States["completed"] != rescueRuns {
					b.Fatalf("states %v", st.States)
				}
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("jobs left after 20 min: %v", st.States)
			}
		}
		children[1].cmd.Process.Signal(syscall.SIGTERM)
		<-children[1].done
		jobs := rescuedJobs(b, pool, s.Name(), workerID(b, children[0]), killed, children[1].out.String())
		if len(jobs) == 0 {
			b.Fatalf("no job was rescued: the killed worker held none")
		}
		for _, j := range jobs {
			toRescue = append(toRescue, j.rescue.Sub(killed))
			toPickup = append(toPickup, j.pickup.Sub(killed))
			waits = append(waits, j.pickup.Sub(j.rescue))
		}
	}
	b.ReportMetric(float64(len(waits))/float64(b.N), "rescued/op")
	b.ReportMetric(median(toRescue).Seconds(), "kill-to-rescue-s")
	b.ReportMetric(median(toPickup).Seconds(), "kill-to-pickup-s")
	b.ReportMetric(slices.Max(toPickup).Seconds(), "kill-to-pickup-max-s")
	b.ReportMetric(median(waits).Seconds(), "rescue-to-pickup-s")
	b.ReportMetric(slices.Max(waits).Seconds(), "rescue-to-pickup-max-s")
	b.ReportMetric(0, "ns/op")
}

// rescuedJobs are the jobs of sweep name that the worker killedID held
// when it was killed: when River's rescuer first took each back after the
// kill, and when the survivor, whose standard output is survivor, next
// started it.
func rescuedJobs(b *testing.B, pool *pgxpool.Pool, name, killedID string, killed time.Time, survivor string) []rescued {
	rows, err := pool.Query(context.Background(), `SELECT j.id, min((e->>'at')::timestamptz)
		FROM polyloop_river.river_job j, unnest(j.errors) e
		WHERE j.args->>'sweep' = $1 AND $2 = ANY(j.attempted_by) AND e->>'error' = 'Stuck job rescued by JobRescuer'
			AND (e->>'at')::timestamptz > $3
		GROUP BY j.id`, name, killedID, killed)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	starts := executionStarts(b, survivor)
	var out []rescued
	for rows.Next() {
		var id int64
		var r rescued
		if err := rows.Scan(&id, &r.rescue); err != nil {
			b.Fatal(err)
		}
		for _, start := range starts[id] {
			if !start.Before(r.rescue) && (r.pickup.IsZero() || start.Before(r.pickup)) {
				r.pickup = start
			}
		}
		if r.pickup.IsZero() {
			b.Fatalf("job %d, rescued at %s, was not executed again by the survivor", id, r.rescue)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return out
}

// executionStarts reads a worker's --json lines: the start of each
// execution of each job.
func executionStarts(b *testing.B, out string) map[int64][]time.Time {
	starts := map[int64][]time.Time{}
	for line := range strings.Lines(out) {
		var ev workerEventLine
		if json.Unmarshal([]byte(line), &ev) != nil || ev.Event != "job" {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, ev.At)
		if err != nil {
			b.Fatal(err)
		}
		starts[ev.JobID] = append(starts[ev.JobID], at.Add(-time.Duration(ev.ElapsedMS)*time.Millisecond))
	}
	return starts
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
