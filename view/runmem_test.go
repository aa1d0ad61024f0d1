package view_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/runfixture"
	"github.com/polyloop/polyloop/internal/trajectory"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/view"
)

// requestBytes is what the server allocates, on average, to answer
// target: an upper bound of the memory the request holds at its peak.
func requestBytes(t *testing.T, h http.Handler, target string) uint64 {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+target, nil)
	h.ServeHTTP(httptest.NewRecorder(), req) // warm: templates, caches
	const n = 3
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d", target, rec.Code)
		}
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / n
}

// peakStore measures what a request holds while it reads: at a read of a
// run's rows — every ReadRows, every 8th ReadRowsFrom chunk — the live heap
// once the read returned (what the request has folded so far, and the
// rows just read), less the live heap before the request (the store's
// own). The store is not a LeaseProber: the view reads no holder.
type peakStore struct {
	*memstore.Store
	base, peak uint64
	chunks     int
}

func (s *peakStore) sample() {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	s.peak = max(s.peak, m.HeapAlloc-min(m.HeapAlloc, s.base))
}

func (s *peakStore) ReadRows(ctx context.Context, runID string) ([]polyloop.Row, error) {
	rows, err := s.Store.ReadRows(ctx, runID)
	s.sample()
	return rows, err
}

func (s *peakStore) ReadRowsFrom(ctx context.Context, runID string, from int64, limit int) ([]polyloop.Row, error) {
	rows, err := s.Store.ReadRowsFrom(ctx, runID, from, limit)
	if s.chunks++; s.chunks%8 == 0 {
		s.sample()
	}
	return rows, err
}

// peakBytes is what answering target holds at its peak while it reads the
// runs' rows (peakStore).
func peakBytes(t *testing.T, st *memstore.Store, target string) uint64 {
	t.Helper()
	ps := &peakStore{Store: st}
	s, err := view.New(view.Options{Store: ps, StepsPerPage: 100})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+target, nil)
	s.ServeHTTP(httptest.NewRecorder(), req) // warm: templates, caches
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	ps.base, ps.peak, ps.chunks = m.HeapAlloc, 0, 0
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("%s: %d", target, rec.Code)
	}
	return ps.peak
}

// unfinishedRun adds run "open" to st: n steps, then a crash (the list
// computes an unfinished run's totals from its log).
func unfinishedRun(t *testing.T, st *memstore.Store, n int) {
	t.Helper()
	turns := make([]scriptmodel.Turn, 0, n+1)
	for i := range n + 1 {
		turns = append(turns, runfixture.Echo(fmt.Sprintf("c%d", i), fmt.Sprintf("observation of step %d: some output of a tool", i+1)))
	}
	agent := runfixture.Agent("long", "")
	agent.Limits.MaxSteps = n + 2
	runfixture.Crashed(t, st, runfixture.NewClock(runfixture.Base), 4*n+2, "open", agent, "a long task", turns...)
}

// TestRequestPeakMemory measures what a run's page, its live stream, a
// comparison, the runs list (which reads the logs of its unfinished runs)
// and the statistics by agent hash (which read every log) hold at their peak while they read the runs' logs, for runs of
// 1,000 and of 10,000 steps: the logs are read a chunk of rows at a
// time and folded as they are read (polyloop.StreamLog,
// trajectory.BuildPageStream, polyloop.DiffStreams), so the peak is the
// page and a chunk, whatever the runs' length. Checked: the 10,000-step
// peak at most 1.5 times the 1,000-step one plus 256 KB. Measured
// (2026-12-07, memstore): see docs/design/0049-ranged-store-reads.md.
func TestRequestPeakMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 10,000-step run")
	}
	targets := []string{"/run?id=long&page=1", "/live?id=long&seq=0&page=1", "/compare?a=long&b=long2&page=1", "/", "/stats?by=hash"}
	peak := map[string]map[int]uint64{}
	for _, n := range []int{1000, 10000} {
		st := longRun(t, n)
		unfinishedRun(t, st, n) // the list reads the logs of its unfinished runs
		for _, target := range targets {
			if peak[target] == nil {
				peak[target] = map[int]uint64{}
			}
			peak[target][n] = peakBytes(t, st, target)
			t.Logf("%s, runs of %d steps: holds %d KB at its peak while it reads", target, n, peak[target][n]/1024)
		}
	}
	for _, target := range targets {
		if p := peak[target]; p[10000] > p[1000]+p[1000]/2+256<<10 {
			t.Errorf("%s holds %d KB at its peak for runs of 10,000 steps, %d KB for 1,000: it grows with the run", target, p[10000]/1024, p[1000]/1024)
		}
	}
}

// heldBytes is the live heap that what build returns holds: the heap
// after a collection with it alive, less the heap after one before it.
func heldBytes(t *testing.T, st *memstore.Store, build func() any) uint64 {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC() // the second frees what sync.Pools kept through the first
	runtime.ReadMemStats(&before)
	v := build()
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(v)
	runtime.KeepAlive(st) // alive in both measures
	return after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc)
}

// runPageHeld is what a run's page holds: the trajectory of its steps, as
// the run page loads it (trajectory.LoadPage).
func runPageHeld(t *testing.T, st *memstore.Store, id string, p trajectory.Page) uint64 {
	return heldBytes(t, st, func() any {
		tr, err := trajectory.LoadPage(context.Background(), st, id, p)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	})
}

// comparePageHeld is what a comparison's page holds, built as the compare
// page builds it: the page's steps of both runs and their diff, from one
// fold of each log read as it is folded (polyloop.DiffObserve).
func comparePageHeld(t *testing.T, st *memstore.Store, a, b string, p trajectory.Page) uint64 {
	return heldBytes(t, st, func() any {
		ctx := context.Background()
		ba, bb := trajectory.NewPageBuilder(a, p), trajectory.NewPageBuilder(b, p)
		d, ends, err := polyloop.DiffObserve(polyloop.StreamLog(ctx, st, a), polyloop.StreamLog(ctx, st, b), ba, bb)
		if err != nil {
			t.Fatal(err)
		}
		return []any{ba.Trajectory(ends[0]), bb.Trajectory(ends[1]), d}
	})
}

// TestRunPageMemory measures the server's memory for the first page (100
// steps) of a 100-step, a 1,000-step and a 10,000-step run, and of the
// comparison of two runs as long.
//
// What is bounded by the page, not the run: what the page keeps — the
// trajectory of the page's steps (trajectory.LoadPage and BuildPage fold
// the log keeping only them, and the read-only fold keeps no conversation
// history), and for a comparison the two runs' page and their diff
// (DiffRuns walks the runs' steps side by side). Measured (2026-12-07,
// memstore): about 50 KB held by a run's page and 100 KB by a comparison,
// for 100 and for 10,000 steps alike, against 4.9 MB for a 10,000-step
// run's page when every step is kept (checked: the 10,000-step figure at
// most twice the 100-step one).
//
// What still grows with the run: what the request allocates in total,
// then drops. The request reads the log a chunk at a time and folds it as
// it reads (TestRequestPeakMemory: its peak does not grow), but it reads
// every row and folds every record: a run's page allocates about 1 KB a
// step (1.5 MB for 100 steps, 2.4 MB for 1,000, 11.3 MB for 10,000; 12.5
// MB when the rows were read whole, 28 MB before the paged fold), a
// comparison about 3 KB a step of the two runs (3.2, 5.9 and 33.4 MB;
// 35.9 MB when read whole, 107 MB before). Checked: at most 1.5 KB and 4
// KB a step beyond the page, so that a regression shows.
func TestRunPageMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 10,000-step run")
	}
	bytes, held, cmpBytes, cmpHeld := map[int]uint64{}, map[int]uint64{}, map[int]uint64{}, map[int]uint64{}
	page := trajectory.Page{Number: 1, Per: 100}
	for _, n := range []int{100, 1000, 10000} {
		st := longRun(t, n)
		s, err := view.New(view.Options{Store: st, StepsPerPage: 100})
		if err != nil {
			t.Fatal(err)
		}
		bytes[n] = requestBytes(t, s, "/run?id=long&page=1")
		held[n] = runPageHeld(t, st, "long", page)
		t.Logf("a run of %d steps: its first page (100 steps) allocates %d KB and holds %d KB", n, bytes[n]/1024, held[n]/1024)
		cmpBytes[n] = requestBytes(t, s, "/compare?a=long&b=long2&page=1")
		cmpHeld[n] = comparePageHeld(t, st, "long", "long2", page)
		t.Logf("two runs of %d steps: their comparison's first page allocates %d KB and holds %d KB", n, cmpBytes[n]/1024, cmpHeld[n]/1024)
	}
	if held[10000] > 2*held[100] {
		t.Errorf("the page of a 10,000-step run holds %d KB, more than twice the %d KB of a 100-step run's", held[10000]/1024, held[100]/1024)
	}
	if cmpHeld[10000] > 2*cmpHeld[100] {
		t.Errorf("the comparison of two 10,000-step runs holds %d KB, more than twice the %d KB of two 100-step runs'", cmpHeld[10000]/1024, cmpHeld[100]/1024)
	}
	if perStep := (cmpBytes[10000] - min(cmpBytes[10000], cmpBytes[100])) / 9900; perStep > 4096 {
		t.Errorf("a comparison allocates %d bytes per step of the runs beyond its page, more than 4 KB", perStep)
	}
	if perStep := (bytes[10000] - min(bytes[10000], bytes[100])) / 9900; perStep > 1536 {
		t.Errorf("a run page allocates %d bytes per step of the run beyond its page, more than 1.5 KB", perStep)
	}
	if bytes[100] > 4<<20 {
		t.Errorf("the page of a 100-step run allocates %d KB, more than 4 MB", bytes[100]/1024)
	}
}
