package view_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/polyloop/polyloop/internal/runfixture"
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
		`data-live="/live?id=unfinished-1&amp;seq=8"`)

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
	contains(t, "a run with itself", body, "No divergence", "Same snapshot")
	body = mustGet(t, s, "/compare?a="+runfixture.OverriddenRun+"&b="+runfixture.UnfinishedRun)
	contains(t, "override vs unfinished", body, "First divergence: before the first step — task", "The snapshots differ in:")
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
