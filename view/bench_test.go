package view_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/runfixture"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/sqlitestore"
	"github.com/polyloop/polyloop/view"
)

// BenchmarkTrajectory1000Steps renders the page of a 1,000-step run, each
// step a model call, a tool call and its observation, all of them on the
// page: the server's time from the request to the last byte (reading the
// log, folding it, rendering).
func BenchmarkTrajectory1000Steps(b *testing.B) {
	s, err := view.New(view.Options{Store: longRun(b, 1000), StepsPerPage: 1001}) // every step on the page, as before paging
	if err != nil {
		b.Fatal(err)
	}
	benchPage(b, s, "/run?id=long")
}

// BenchmarkTrajectory1000MaintainedSteps renders the page of a 1,000-step
// run with memory: BenchmarkTrajectory1000Steps's steps, each also showing
// a view version, and each followed by its maintenance (an operation
// fixing the proposal's input, the proposal received, a memory write, a
// view adjustment, maintenance_done).
func BenchmarkTrajectory1000MaintainedSteps(b *testing.B) {
	st := memstore.New()
	runfixture.RememberingLong(b, st, runfixture.NewClock(runfixture.Base), "long", 1000)
	log, err := polyloop.ReadLog(context.Background(), st, "long")
	if err != nil {
		b.Fatal(err)
	}
	done := 0
	for _, r := range log.Records {
		if _, ok := r.Body.(*polyloop.MaintenanceDone); ok {
			done++
		}
	}
	if done != 1001 {
		b.Fatalf("%d maintained steps, want 1001", done)
	}
	s, err := view.New(view.Options{Store: st, StepsPerPage: 1002})
	if err != nil {
		b.Fatal(err)
	}
	benchPage(b, s, "/run?id=long")
}

// BenchmarkRunsList100k lists the newest page, and a page 1,000 pages deep
// (through its cursor), of a SQLite store holding 100,000 runs.
func BenchmarkRunsList100k(b *testing.B) {
	path := filepath.Join(b.TempDir(), "runs.db")
	st, err := sqlitestore.Open(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	fill(b, st, 100000)
	s, err := view.New(view.Options{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	deep := fmt.Sprintf("/?after=%d.r%06d", runfixture.Base.Add(50000*time.Millisecond).UnixNano(), 50000)
	for name, target := range map[string]string{"first": "/", "deep": deep, "sorted-by-cost-refused": "/?sort=cost"} {
		b.Run(name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+target, nil)
			for b.Loop() {
				rec := httptest.NewRecorder()
				s.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%d", rec.Code)
				}
			}
		})
	}
}

// fill appends n finished runs of three records, from 32 writers at once
// (the store's group commit).
func fill(b *testing.B, st polyloop.Store, n int) {
	ctx := context.Background()
	var wg sync.WaitGroup
	ch := make(chan int)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ch {
				id := fmt.Sprintf("r%06d", i)
				at := runfixture.Base.Add(time.Duration(i) * time.Millisecond)
				recs := []polyloop.Record{
					{Seq: 0, At: at, Body: &polyloop.RunStarted{RunID: id, SnapshotHash: "sha256:h", LibraryVersion: "bench", Snapshot: polyloop.Snapshot{Agent: "a"}}},
					{Seq: 1, At: at, Body: &polyloop.ModelCallIntent{Step: 1, CallID: "m1.1", Attempt: 1}},
					{Seq: 2, At: at, Body: &polyloop.RunFinished{StopReason: polyloop.StopMaxSteps, Totals: polyloop.Totals{Steps: i % 9, InputTokens: int64(i)}}},
				}
				if err := polyloop.AppendRecords(ctx, st, id, recs...); err != nil {
					b.Error(err)
				}
			}
		}()
	}
	for i := range n {
		ch <- i
	}
	close(ch)
	wg.Wait()
}

// BenchmarkLongRunPages renders the first page of a run's steps, and the
// first page of its comparison with a run as long, for runs of 1,000 and
// 10,000 steps (go test -bench LongRunPages -benchmem): the page's bytes
// (MB/page) stay the same whatever the run's length; the allocations per
// page (B/op) are the log read and folded whole (keeping only the page's
// steps), which grow with it.
func BenchmarkLongRunPages(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		st := longRun(b, n)
		s, err := view.New(view.Options{Store: st})
		if err != nil {
			b.Fatal(err)
		}
		for page, target := range map[string]string{"run": "/run?id=long", "compare": "/compare?a=long&b=long2"} {
			b.Run(fmt.Sprintf("%s/steps=%d", page, n), func(b *testing.B) { benchPage(b, s, target) })
		}
	}
}

// benchPage serves target again and again, reporting its allocations and
// the page's size.
func benchPage(b *testing.B, s *view.Server, target string) {
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+target, nil)
	b.ReportAllocs()
	b.ResetTimer()
	var size int
	for b.Loop() {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%d", rec.Code)
		}
		size = rec.Body.Len()
	}
	b.ReportMetric(float64(size)/1e6, "MB/page")
}
