package view_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/runfixture"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/view"
)

// TestRunningRunIsNotCrashed: while a live process holds an unfinished
// run's lease, its page says it is running — whose, since when — and what
// its log holds open is under way: no resume plan, no "unknown outcome".
// Once the holder is gone, the same log reads as a crashed run. The live
// stream says so too when the holder goes, though the log did not change.
func TestRunningRunIsNotCrashed(t *testing.T) {
	t.Parallel()
	s, st := newServer(t, view.Options{Poll: 5e6})
	ctx := context.Background()
	since := time.Date(2026, 12, 7, 9, 30, 0, 0, time.UTC)
	lease, err := st.AcquireLease(ctx, runfixture.UnfinishedRun, polyloop.LeaseRequest{
		Owner: polyloop.LeaseOwner{Host: "box-7", PID: 4321, Token: "tok", Since: since}})
	if err != nil {
		t.Fatal(err)
	}
	body := mustGet(t, s, "/run?id="+runfixture.UnfinishedRun)
	contains(t, "running run", body, `<span class="badge running" id="running">running</span> (pid 4321 on box-7, since 2026-12-07 09:30:00`,
		`<span class="badge running">under way</span> no outcome recorded yet`)
	for _, not := range []string{"resume would", "unknown outcome", "outcome unknown", `badge unfinished">unfinished`} {
		if strings.Contains(body, not) {
			t.Errorf("the page of a running run says %q", not)
		}
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var seen []string
	for e := range sse(t, sctx, srv.URL+"/live?id="+runfixture.UnfinishedRun+"&seq=0") {
		seen = append(seen, e.Name+": "+e.Data)
		if e.Name != "status" {
			continue
		}
		if strings.Contains(e.Data, "resume would") {
			break
		}
		if strings.Contains(e.Data, "running") {
			_ = lease.Release(ctx) // the holder goes; the log does not change
		}
	}
	if last := seen[len(seen)-1]; !strings.Contains(last, "resume would") || !strings.Contains(strings.Join(seen, "\n"), "outcome unknown") {
		t.Errorf("the stream does not say the holder went:\n%s", strings.Join(seen, "\n"))
	}
	body = mustGet(t, s, "/run?id="+runfixture.FailedRun)
	if strings.Contains(body, "$0") {
		t.Errorf("the page of a run of an unpriced model shows a $0 cost:\n%s", body)
	}
}

// TestUnpricedFailedRunHasNoCost: a run of an unpriced model whose only
// call failed has an unknown cost: the statistics page leaves it out of
// the cost histogram and counts it, and no page shows it as $0.
func TestUnpricedFailedRunHasNoCost(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	r := runfixture.Runner(st, runfixture.NewClock(runfixture.Base), 0)
	r.Model = scriptmodel.New(scriptmodel.Turn{Err: errors.New("503 from the provider")})
	if res, err := r.Run(context.Background(), "u1", runfixture.Agent("unpriced", "You echo."), polyloop.Task{Input: "t"}); err != nil || res.StopReason != polyloop.StopLLMError {
		t.Fatalf("%+v, %v", res, err)
	}
	s, _ := newServer(t, view.Options{Store: st})
	hidden := regexp.MustCompile(`<span hidden>.*?</span></span>`) // the spend of no unfinished runs
	for _, page := range []string{"/stats", "/run?id=u1", "/"} {
		body := hidden.ReplaceAllString(mustGet(t, s, page), "")
		if strings.Contains(body, "$0") {
			t.Errorf("%s shows a $0 cost:\n%s", page, body)
		}
	}
	contains(t, "stats", mustGet(t, s, "/stats"), `data-stat="cost_unknown_runs" data-value="1"`, `data-stat="cost_usd.n" data-value="0"`,
		`data-stat="spend.cost_usd" data-value="0">unknown<`)
}
