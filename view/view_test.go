package view_test

import (
	"context"
	"net/http"
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

func TestNewNeedsAStore(t *testing.T) {
	t.Parallel()
	if _, err := view.New(view.Options{}); err == nil {
		t.Fatal("New without a store: no error")
	}
}

// TestReadOnly: every method but GET and HEAD is refused, on every page,
// before any handler runs.
func TestReadOnly(t *testing.T) {
	t.Parallel()
	s, _ := newServer(t, view.Options{})
	for _, path := range []string{"/", "/run?id=" + runfixture.BatchRun, "/stats", "/live?id=x&seq=0", "/static/style.css", "/nope"} {
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
			res, _ := get(t, s, m, path)
			if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s: %d, Allow %q", m, path, res.StatusCode, res.Header.Get("Allow"))
			}
		}
		if res, _ := get(t, s, http.MethodHead, path); res.StatusCode == http.StatusMethodNotAllowed {
			t.Errorf("HEAD %s refused", path)
		}
	}
}

// TestSecurityHeaders: every answer, error pages included, carries the
// Content-Security-Policy that forbids inline script and other origins.
func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	s, _ := newServer(t, view.Options{})
	for _, path := range []string{"/", "/run?id=" + runfixture.BatchRun, "/run?id=missing", "/stats", "/compare?a=x", "/static/live.js"} {
		res, _ := get(t, s, http.MethodGet, path)
		csp := res.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("%s: CSP %q allows something unsafe", path, csp)
		}
		if res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", path)
		}
	}
}

// TestHostCheck: a request naming a host that is not loopback (a DNS
// rebinding attack) is refused unless allowed.
func TestHostCheck(t *testing.T) {
	t.Parallel()
	s, _ := newServer(t, view.Options{AllowedHosts: []string{"viewer.lan:8686"}})
	for host, want := range map[string]int{
		"127.0.0.1:8686": http.StatusOK, "localhost:9": http.StatusOK, "[::1]:8686": http.StatusOK, "127.0.0.2": http.StatusOK,
		"viewer.lan:8686": http.StatusOK, "evil.example:8686": http.StatusMisdirectedRequest,
		"127.0.0.1.evil.example": http.StatusMisdirectedRequest, "viewer.lan:9": http.StatusMisdirectedRequest,
	} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+host+"/", nil)
		rec := newRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %s: %d, want %d", host, rec.Code, want)
		}
	}
}

func TestTrajectoryPage(t *testing.T) {
	t.Parallel()
	s, _ := newServer(t, view.Options{})
	body := mustGet(t, s, "/run?id="+runfixture.BatchRun)
	contains(t, "batch run", body,
		`id="step-1"`, `id="step-2"`, `id="step-3"`,
		"action <code>a1.1</code> (1 of 2)", "action <code>a1.2</code> (2 of 2)",
		`<span class="badge executed">executed</span>`, `<span class="badge not_executed">not_executed</span>`,
		`<span class="badge synthetic">synthetic</span>`, "executor said (audit, not in the history)",
		`unknown tool &#34;nosuch&#34;`, // the audit text, escaped
		"disk full", "decision: <b>final</b>", `<span class="badge completed">completed</span>`,
		"run started")
	if strings.Contains(body, "data-live=\"/live") {
		t.Error("a finished run's page follows the log")
	}

	body = mustGet(t, s, "/run?id="+runfixture.ResumedRun)
	contains(t, "resumed run", body, "outcome unknown</span> replayed below", "attempt 2",
		"<b>#2</b>", "action a2 replayed (attempt 2; its outcome was unknown)", "after a gap of 1h0m0s")

	body = mustGet(t, s, "/run?id="+runfixture.OverriddenRun)
	contains(t, "overridden run", body, "Configuration override at record 6", "<code>system</code>",
		"resume with a changed configuration", "outcome unknown</span> intent without a result")

	body = mustGet(t, s, "/run?id="+runfixture.UnfinishedRun)
	contains(t, "unfinished run", body, `<span class="badge unfinished">unfinished</span>`, "resume would: <b>replay_action</b>",
		`data-live="/live?id=unfinished-1&amp;page=1&amp;seq=8"`)

	body = mustGet(t, s, "/run?id="+runfixture.ParentRun)
	contains(t, "parent run", body, `child run <a href="/run?id=parent-1%2f1.1">parent-1/1.1</a> ended <span class="badge completed">completed</span>: reception <b>handled</b>`,
		`<h2>Child runs</h2><ul><li><a href="/run?id=parent-1%2f1.1">parent-1/1.1</a> (helper): completed</li>`)
	body = mustGet(t, s, "/run?id=parent-1/1.1")
	contains(t, "child run", body, `child of <a href="/run?id=parent-1">parent-1</a> (step 1, action 0, child 1)`)

	body = mustGet(t, s, "/run?id="+runfixture.FailedRun)
	contains(t, "failed run", body, `<span class="badge llm_error">failed</span>`, "503 from the provider", "cost unknown")
}

func TestUnknownRun(t *testing.T) {
	t.Parallel()
	s, _ := newServer(t, view.Options{})
	for path, want := range map[string]int{
		"/run?id=nope": http.StatusNotFound, "/run": http.StatusBadRequest,
		"/compare?a=" + runfixture.BatchRun + "&b=nope": http.StatusNotFound, "/compare?a=x": http.StatusBadRequest,
		"/?sort=sideways": http.StatusBadRequest, "/?stop=bored": http.StatusBadRequest, "/?after=x": http.StatusBadRequest,
		"/stats?by=colour": http.StatusBadRequest, "/nope": http.StatusNotFound,
	} {
		if res, body := get(t, s, http.MethodGet, path); res.StatusCode != want {
			t.Errorf("%s: %d, want %d\n%s", path, res.StatusCode, want, body)
		}
	}
}

func TestComparePage(t *testing.T) {
	t.Parallel()
	s, _ := newServer(t, view.Options{})
	body := mustGet(t, s, "/compare?a="+runfixture.BatchRun+"&b="+runfixture.BatchRun)
	contains(t, "a run with itself", body, "No divergence: the runs agree on all 3 steps", "Same snapshot")
	body = mustGet(t, s, "/compare?a="+runfixture.OverriddenRun+"&b="+runfixture.UnfinishedRun)
	contains(t, "override vs unfinished", body, `First divergence: <a href="/compare?a=override-1&amp;b=unfinished-1&amp;page=1#cmp-1">step 1</a> — <b>reply</b>`,
		"The snapshots differ in:", "<code>task.input</code>", `<th>override-1</th><td><pre class="text"> [echo {&#34;text&#34;:&#34;a&#34;}]</pre>`,
		`<div class="cmprow diverges" id="cmp-1">`)
}

// divergenceOnPage reads the first divergence a comparison page shows: the
// step ("" when none), and what differs.
var divergenceOnPage = regexp.MustCompile(`First divergence: (?:<a href="[^"#]*#cmp-(\d+)">step \d+</a>|before the first step) — <b>([a-z]+)</b>`)

// TestCompareIsDiffRuns: for every pair of the fixture's runs, the page
// says what polyloop.DiffRuns says — the same step, the same difference,
// the same snapshot fields — so the page and polyloop diff never disagree.
func TestCompareIsDiffRuns(t *testing.T) {
	t.Parallel()
	s, st := newServer(t, view.Options{})
	ids := []string{runfixture.BatchRun, runfixture.ResumedRun, runfixture.OverriddenRun, runfixture.UnfinishedRun, runfixture.FailedRun, runfixture.ParentRun}
	ctx := context.Background()
	diverged := 0
	for _, a := range ids {
		for _, b := range ids {
			la, _ := polyloop.ReadLog(ctx, st, a)
			lb, _ := polyloop.ReadLog(ctx, st, b)
			la.RunID, lb.RunID = a, b
			want := polyloop.DiffRuns(la, lb)
			body := mustGet(t, s, "/compare?a="+a+"&b="+b)
			m := divergenceOnPage.FindStringSubmatch(body)
			switch {
			case want.First == nil && (m != nil || !strings.Contains(body, "No divergence")):
				t.Errorf("%s vs %s: DiffRuns finds no divergence, the page shows %q", a, b, m)
			case want.First != nil && m == nil:
				t.Errorf("%s vs %s: DiffRuns finds %+v, the page shows none", a, b, want.First)
			case want.First != nil && (m[1] != stepText(want.First.Step) || m[2] != want.First.What):
				t.Errorf("%s vs %s: the page shows step %q %q, DiffRuns %d %q", a, b, m[1], m[2], want.First.Step, want.First.What)
			}
			if want.First != nil {
				diverged++
			}
			for _, f := range want.Snapshot {
				contains(t, a+" vs "+b, body, "<code>"+f+"</code>")
			}
			if len(want.Snapshot) == 0 {
				contains(t, a+" vs "+b, body, "Same snapshot")
			}
		}
	}
	if diverged == 0 {
		t.Fatal("no pair of runs diverges: the test compares nothing")
	}
}

func stepText(n int) string {
	if n == 0 {
		return ""
	}
	return itoa(n)
}

func TestRunsList(t *testing.T) {
	t.Parallel()
	s, _ := newServer(t, view.Options{})
	body := mustGet(t, s, "/")
	order := []string{runfixture.ParentRun, runfixture.FailedRun, runfixture.UnfinishedRun, runfixture.OverriddenRun, runfixture.ResumedRun, runfixture.BatchRun}
	last := -1
	for _, id := range order {
		i := strings.Index(body, `href="/run?id=`+id+`"`)
		if i < last {
			t.Errorf("runs list: %s out of order (newest first)", id)
		}
		last = i
	}
	body = mustGet(t, s, "/?agent=alpha&sort=old")
	contains(t, "alpha, oldest first", body, runfixture.BatchRun, runfixture.ResumedRun)
	if strings.Contains(body, runfixture.FailedRun) || strings.Index(body, runfixture.BatchRun) > strings.Index(body, runfixture.ResumedRun) {
		t.Errorf("agent filter or oldest-first order wrong")
	}
	body = mustGet(t, s, "/?status=unfinished")
	if !strings.Contains(body, runfixture.UnfinishedRun) || strings.Contains(body, runfixture.BatchRun) {
		t.Errorf("status filter: %s", body)
	}
	body = mustGet(t, s, "/?stop=llm_error")
	if !strings.Contains(body, runfixture.FailedRun) || strings.Contains(body, runfixture.UnfinishedRun) {
		t.Errorf("stop filter")
	}
	body = mustGet(t, s, "/?task=one+and")
	if ids := pageIDs(body); len(ids) != 1 || ids[0] != runfixture.ResumedRun || !strings.Contains(body, `title="Echo one and two."`) {
		t.Errorf("task search: %q", ids)
	}
	body = mustGet(t, s, "/?sort=tokens")
	if strings.Index(body, "id="+runfixture.BatchRun) > strings.Index(body, "id="+runfixture.ResumedRun) {
		t.Errorf("sort by tokens: batch run (237 tokens) after the resumed one (153)")
	}
}

// A fork's copied steps are said as ls and diff say them: the compare page
// and the list count them with the fork's own, and name them copied.
func TestComparePageSaysCopiedSteps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := memstore.New()
	turns := []scriptmodel.Turn{runfixture.Echo("c1", "a"), runfixture.Echo("c2", "b"), scriptmodel.Reply("done")}
	clock := runfixture.NewClock(time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC))
	if _, err := runfixture.Runner(st, clock, 1e-6, turns...).Run(ctx, "src", runfixture.Agent("a", "sys"), polyloop.Task{Input: "t"}); err != nil {
		t.Fatal(err)
	}
	if _, err := runfixture.Runner(st, clock, 1e-6, turns...).Fork(ctx, "src", 2, "fork", runfixture.Agent("a", "sys")); err != nil {
		t.Fatal(err)
	}
	s, _ := newServer(t, view.Options{Store: st})
	contains(t, "compare", mustGet(t, s, "/compare?a=src&b=fork"),
		"<tr><td>steps</td><td>3</td><td>3 (2 copied)</td></tr>", "No divergence: the runs agree on all 3 steps")
	contains(t, "runs", mustGet(t, s, "/"), `<td class="n">3 (2 copied)</td>`)
	contains(t, "run", mustGet(t, s, "/run?id=fork"), `<span data-total="steps">3 steps (2 copied)</span>`)
}
