package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/sqlitestore"
)

// The Go benchmarks behind `polyloop bench`: they report per-step figures of
// workload W. `polyloop bench` is the reference; these are for profiling
// (go test -bench . -cpuprofile) and for spotting regressions.

// BenchmarkRunMemory is measurement 1: one run of W on the memory store.
func BenchmarkRunMemory(b *testing.B) {
	for _, steps := range []int{100, 1000} {
		b.Run(fmt.Sprintf("S=%d", steps), func(b *testing.B) {
			w := Workload{Steps: steps}
			model := w.Model()
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				r := w.RunnerWithModel(memstore.New(), model)
				b.StartTimer()
				res, err := r.Run(context.Background(), "w", w.Agent(), w.Task())
				if err == nil {
					err = w.Check(res)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			reportPerStep(b, steps)
		})
	}
}

// BenchmarkRunSQLite is measurement 2 on SQLite, at S=100 to stay short:
// two synced commits per step bound it.
func BenchmarkRunSQLite(b *testing.B) {
	w := Workload{Steps: 100}
	model := w.Model()
	dir := b.TempDir()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		b.StopTimer()
		i++
		st, err := sqlitestore.Open(filepath.Join(dir, fmt.Sprintf("%d.db", i)), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err := w.RunnerWithModel(st, model).Run(context.Background(), "w", w.Agent(), w.Task())
		b.StopTimer()
		if err == nil {
			err = w.Check(res)
		}
		if cerr := st.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	reportPerStep(b, w.Steps)
}

func reportPerStep(b *testing.B, steps int) {
	n := float64(b.N) * float64(steps+1)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/step")
}

// stoppedLog returns the log of a run of W with steps steps stopped before
// its final model call, as resume finds it.
func stoppedLog(b *testing.B, steps int) polyloop.RunLog {
	st := memstore.New()
	ids, err := prepareStopped(context.Background(), st, Workload{Steps: steps}, 1)
	if err != nil {
		b.Fatal(err)
	}
	log, err := polyloop.ReadLog(context.Background(), st, ids[0])
	if err != nil {
		b.Fatal(err)
	}
	return log
}

// BenchmarkPlanResume is the plan part of measurement 4.
func BenchmarkPlanResume(b *testing.B) {
	log := stoppedLog(b, 1000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := polyloop.PlanResume(log); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadLogSQLite is the log-read part of measurement 4 on SQLite
// (a warm process: the page cache and the connection are hot).
func BenchmarkReadLogSQLite(b *testing.B) {
	log := stoppedLog(b, 1000)
	st, err := sqlitestore.Open(filepath.Join(b.TempDir(), "w.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if err := polyloop.AppendRecords(context.Background(), st, log.RunID, log.Records...); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		got, err := polyloop.ReadLog(context.Background(), st, log.RunID)
		if err != nil || len(got.Records) != len(log.Records) {
			b.Fatal(len(got.Records), err)
		}
	}
}

// BenchmarkResumeMemory is measurement 4 in process on the memory store:
// Resume of a stopped 1,000-step run, through to its end (one model call).
func BenchmarkResumeMemory(b *testing.B) {
	w := Workload{Steps: 1000}
	log := stoppedLog(b, w.Steps)
	model := w.Model()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		st := memstore.New()
		st.Put(log.RunID, slices.Clone(log.Records))
		b.StartTimer()
		res, err := w.RunnerWithModel(st, model).Resume(context.Background(), log.RunID, w.Agent())
		if err == nil {
			err = w.Check(res)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResumeSQLite is measurement 4 in a warm process on SQLite: Resume
// of a stopped 1,000-step run through to its end (two commits, one call).
func BenchmarkResumeSQLite(b *testing.B) {
	w := Workload{Steps: 1000}
	log := stoppedLog(b, w.Steps)
	model := w.Model()
	st, err := sqlitestore.Open(filepath.Join(b.TempDir(), "w.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		i++
		id := fmt.Sprintf("stopped%d", i)
		if err := polyloop.AppendRecords(context.Background(), st, id, renamed(log, id)...); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err := w.RunnerWithModel(st, model).Resume(context.Background(), id, w.Agent())
		if err == nil {
			err = w.Check(res)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// renamed returns a copy of a log's records for run id.
func renamed(log polyloop.RunLog, id string) []polyloop.Record {
	recs := slices.Clone(log.Records)
	rs := *recs[0].Body.(*polyloop.RunStarted)
	rs.RunID = id
	recs[0].Body = &rs
	return recs
}

// BenchmarkConcurrentSQLite is measurement 3 on SQLite at C=64, S=50: the
// steps/s metric is the aggregate throughput.
func BenchmarkConcurrentSQLite(b *testing.B) {
	w := Workload{Steps: 50}
	dir := b.TempDir()
	steps, i := 0, 0
	for b.Loop() {
		b.StopTimer()
		i++
		st, err := sqlitestore.Open(filepath.Join(dir, fmt.Sprintf("%d.db", i)), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		_, n, err := runConcurrently(context.Background(), st, w, 64)
		b.StopTimer()
		if cerr := st.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			b.Fatal(err)
		}
		steps += n
		b.StartTimer()
	}
	b.ReportMetric(float64(steps)/b.Elapsed().Seconds(), "steps/s")
}
