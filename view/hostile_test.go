package view_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/runfixture"
	"github.com/polyloop/polyloop/internal/ssetest"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/view"
)

// hostileText ends SSE lines with bare carriage returns to forge an end
// event and poison the browser's Last-Event-ID.
const hostileText = "ok\revent: end\rid: 99999\rdata: completed\r\rdata: x\u2028\u0085\r\n"

// TestLiveFramingHoldsAgainstCR: a text holding lone CRs reaches the live
// stream as data, not as fields: no forged end event, no forged id.
func TestLiveFramingHoldsAgainstCR(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	clock := runfixture.NewClock(runfixture.Base)
	runfixture.Crashed(t, st, clock, 6, "hostile-1", runfixture.Agent("alpha", "You echo."), "task",
		runfixture.Echo("c1", hostileText), runfixture.Echo("c2", "y"), scriptmodel.Reply("done"))
	log, _ := polyloop.ReadLog(context.Background(), st, "hostile-1")
	s, _ := newServer(t, view.Options{Store: st, Poll: 5e6})
	srv := httptest.NewServer(s)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	events, err := ssetest.Open(ctx, srv.URL+"/live?id=hostile-1&seq=0")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for e := range events {
		n++
		if e.Name != "steps" && e.Name != "status" {
			t.Errorf("event %q (data %q): forged by the text", e.Name, e.Data)
		}
		if e.LastID != strconv.Itoa(len(log.Records)) {
			t.Errorf("last event id %q after a %s event, want %d", e.LastID, e.Name, len(log.Records))
		}
		if e.Name == "steps" && !strings.Contains(e.Data, "ok\nevent: end\nid: 99999") {
			t.Errorf("the steps event lost the text's lines:\n%s", e.Data)
		}
	}
	if n != 2 {
		t.Errorf("%d events, want steps and status", n)
	}
}

// TestHugePageNumber: a page number whose offset overflows is a bad
// request, not a panic.
func TestHugePageNumber(t *testing.T) {
	t.Parallel()
	s, _ := newServer(t, view.Options{})
	for _, target := range []string{"/?sort=steps&page=288230376151711744", "/?sort=steps&page=9223372036854775807", "/run?id=" + runfixture.BatchRun + "&page=288230376151711744"} {
		res, body := getRecovered(t, s, target)
		if res == nil || res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "page") {
			t.Errorf("GET %s: %v\n%s", target, res, body)
		}
	}
}

// getRecovered is get, turning a handler's panic into a failed test
// rather than a crashed one.
func getRecovered(t *testing.T, h http.Handler, target string) (res *http.Response, body string) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("GET %s panicked: %v", target, p)
			res = nil
		}
	}()
	return get(t, h, http.MethodGet, target)
}

// TestLiveStreamsCapped: a server holds at most MaxStreams live streams;
// one more is refused (503) until one ends.
func TestLiveStreamsCapped(t *testing.T) {
	t.Parallel()
	s, _ := newServer(t, view.Options{Poll: time.Hour, MaxStreams: 2})
	srv := httptest.NewServer(s)
	defer srv.Close()
	url := srv.URL + "/live?id=" + runfixture.UnfinishedRun + "&seq=0"
	var cancels []context.CancelFunc
	for range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		cancels = append(cancels, cancel)
		events, err := ssetest.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		<-events // the stream is open and has sent its first event
	}
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a third stream: %s, want 503", res.Status)
	}
	cancels[0]()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ctx, cancel := context.WithCancel(context.Background())
		_, err := ssetest.Open(ctx, url)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no stream once one ended: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancels[1]()
}

// longRun stores a finished run of n steps, each an echo.
func longRun(t testing.TB, n int) *memstore.Store {
	t.Helper()
	st := memstore.New()
	turns := make([]scriptmodel.Turn, 0, n+1)
	for i := range n {
		turns = append(turns, runfixture.Echo(fmt.Sprintf("c%d", i), fmt.Sprintf("observation of step %d: some output of a tool", i+1)))
	}
	turns = append(turns, scriptmodel.Reply("done"))
	agent := runfixture.Agent("long", "")
	agent.Limits.MaxSteps = n + 1
	runfixture.Run(t, runfixture.Runner(st, runfixture.NewClock(runfixture.Base), 0.000001, turns...), "long", agent, "a long task")
	runfixture.Run(t, runfixture.Runner(st, runfixture.NewClock(runfixture.Base), 0.000001, turns...), "long2", agent, "a long task")
	return st
}

// TestRunAndComparePagesArePaged: a run's page and a comparison show
// StepsPerPage steps per page, with links to the others, and the pages of
// a run ten times as long are no larger.
func TestRunAndComparePagesArePaged(t *testing.T) {
	t.Parallel()
	sizes := map[string]map[int]int{"run": {}, "compare": {}}
	for _, n := range []int{300, 3000} {
		s, _ := newServer(t, view.Options{Store: longRun(t, n), StepsPerPage: 100})
		for page, targets := range map[string][]string{"run": {"/run?id=long", "/run?id=long&page=2"}, "compare": {"/compare?a=long&b=long2", "/compare?a=long&b=long2&page=2"}} {
			first := mustGet(t, s, targets[0])
			second := mustGet(t, s, targets[1])
			contains(t, page+" page 1", first, `id="step-1"`, `id="step-100"`, "page=2")
			contains(t, page+" page 2", second, `id="step-101"`, `id="step-200"`)
			for _, absent := range []string{`id="step-101"`, `id="step-300"`} {
				if strings.Contains(first, absent) {
					t.Errorf("%s page 1 of %d steps holds %s", page, n, absent)
				}
			}
			sizes[page][n] = len(first)
		}
	}
	for page, by := range sizes {
		if by[3000] > by[300]+by[300]/10 {
			t.Errorf("%s page: %d bytes for 3000 steps, %d for 300: grows with the run", page, by[3000], by[300])
		}
	}
}

// TestCompareDivergenceOnALaterPage: a comparison whose runs part on its
// second page links the divergence to that page, which marks the step,
// and its first page does not.
func TestCompareDivergenceOnALaterPage(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	for _, id := range []string{"a", "b"} {
		turns := make([]scriptmodel.Turn, 0, 251)
		for i := range 250 {
			obs := fmt.Sprintf("observation of step %d", i+1)
			if id == "b" && i+1 == 150 {
				obs = "another observation"
			}
			turns = append(turns, runfixture.Echo(fmt.Sprintf("c%d", i), obs))
		}
		turns = append(turns, scriptmodel.Reply("done"))
		agent := runfixture.Agent("long", "")
		agent.Limits.MaxSteps = 251
		runfixture.Run(t, runfixture.Runner(st, runfixture.NewClock(runfixture.Base), 0.000001, turns...), id, agent, "a long task")
	}
	s, err := view.New(view.Options{Store: st, StepsPerPage: 100})
	if err != nil {
		t.Fatal(err)
	}
	first := mustGet(t, s, "/compare?a=a&b=b")
	contains(t, "compare page 1", first, `First divergence: <a href="/compare?a=a&amp;b=b&amp;page=2#cmp-150">step 150</a>`)
	if strings.Contains(first, "divmark") {
		t.Error("compare page 1 marks a divergence it does not hold")
	}
	contains(t, "compare page 2", mustGet(t, s, "/compare?a=a&b=b&page=2"), `class="cmprow diverges" id="cmp-150"`)
}
