package view_test

import (
	"context"
	"flag"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/runfixture"
	"github.com/polyloop/polyloop/sqlitestore"
	"github.com/polyloop/polyloop/view"
)

var rewrite = flag.Bool("rewrite", false, "write the browser tests' screenshots to docs/ too (view-trajectory.png, view-preview.png)")

// chromiumEnv names the Chromium the browser test drives; .ci/run sets it.
const chromiumEnv = "POLYLOOP_TEST_CHROMIUM"

// TestBrowser drives Debian's Chromium, headless, through the view of a
// SQLite store: the runs list (a suspended run marked awaiting), a filter,
// a click into an unfinished run, its trajectory following the log while
// a resume appends records, a comparison of two runs chosen in the list,
// a suspended run's pending gates; a screenshot of the trajectory goes to
// the test's artifacts.
func TestBrowser(t *testing.T) {
	ctx, base, st := browse(t, nil, func(st *sqlitestore.Store) {
		runfixture.Gated(t, st, runfixture.Populate(t, st))
	})

	// The list, newest first.
	do(t, ctx, "open the list", chromedp.Navigate(base+"/"), chromedp.WaitVisible("#runs"))
	if rows := value(t, ctx, "count the runs", chromedp.Evaluate[int](`document.querySelectorAll("#runs a.runlink").length`)); rows != 9 {
		t.Fatalf("the list shows %d runs, want 9", rows)
	}
	awaiting := value(t, ctx, "the suspended run's status", chromedp.Text(`//a[@class="runlink"][text()="`+runfixture.SuspendedRun+`"]/ancestor::tr//span[contains(@class,"badge")]`))
	if awaiting != "awaiting approval and delivery" {
		t.Fatalf("the suspended run is listed as %q", awaiting)
	}
	// Filter: agent beta, unfinished; the URL holds the state. The
	// unfiltered list has the run too: wait for the list without alpha's.
	do(t, ctx, "filter", chromedp.SendKeys(`input[name="agent"]`, "beta"),
		chromedp.SetValue(`select[name="status"]`, "unfinished"), chromedp.Click("#apply"),
		chromedp.WaitNotPresent(`a.runlink[href="/run?id=`+runfixture.BatchRun+`"]`),
		chromedp.WaitVisible(`a.runlink[href="/run?id=`+runfixture.UnfinishedRun+`"]`))
	url := value(t, ctx, "location", chromedp.Location())
	ids := value(t, ctx, "the runs listed", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#runs a.runlink")).map(a => a.textContent)`))
	if !strings.Contains(url, "agent=beta") || !strings.Contains(url, "status=unfinished") || len(ids) != 1 || ids[0] != runfixture.UnfinishedRun {
		t.Fatalf("after filtering: URL %s, runs %q", url, ids)
	}
	// Click into the run: its trajectory, unfinished, the action of step 2
	// of unknown outcome, the page following the log.
	do(t, ctx, "open the run", chromedp.Click(`a.runlink`), chromedp.WaitVisible("#step-2"))
	status := value(t, ctx, "status", chromedp.Text("#status"))
	if !strings.Contains(status, "unfinished") || !strings.Contains(status, "live: following the log") {
		t.Fatalf("run page status %q", status)
	}
	// A resume appends records while the page is open: the page shows
	// them without a reload.
	value(t, ctx, "mark the page", chromedp.Evaluate[string](`window.notReloaded = "yes"`))
	resumeUnfinished(t, st)
	do(t, ctx, "live update", chromedp.WaitVisible("#step-3"), chromedp.WaitVisible("#status .badge.completed"))
	finish := value(t, ctx, "status", chromedp.Text("#status"))
	marker := value(t, ctx, "the mark", chromedp.Evaluate[string](`window.notReloaded || "reloaded"`))
	if marker != "yes" || !strings.Contains(finish, "#2") || !strings.Contains(finish, "replayed") {
		t.Fatalf("after the resume: status %q, page %s", finish, marker)
	}
	do(t, ctx, "scroll to the top", chromedp.ScrollIntoView("h1"))
	saveShot(t, "trajectory.png", value(t, ctx, "screenshot", chromedp.CaptureScreenshot()))

	// Compare two runs chosen in the list.
	do(t, ctx, "compare", chromedp.Navigate(base+"/?agent=beta"), chromedp.WaitVisible("#runs"),
		chromedp.Click(`input[name="a"][value="`+runfixture.OverriddenRun+`"]`),
		chromedp.Click(`input[name="b"][value="`+runfixture.UnfinishedRun+`"]`),
		chromedp.Click("#compare"), chromedp.WaitVisible("#divergence"))
	divergence := value(t, ctx, "divergence", chromedp.Text("#divergence"))
	url = value(t, ctx, "location", chromedp.Location())
	u, err := neturl.Parse(url)
	if err != nil || u.Path != "/compare" || u.Query().Get("a") != runfixture.OverriddenRun || u.Query().Get("b") != runfixture.UnfinishedRun ||
		!strings.Contains(divergence, "First divergence: step 1 — reply") {
		t.Fatalf("compare page %s: %q", url, divergence)
	}

	// A suspended run: what it awaits, each pending gate with its
	// arguments and the command that answers it.
	do(t, ctx, "a suspended run", chromedp.Navigate(base+"/run?id="+runfixture.SuspendedRun), chromedp.WaitVisible("#awaiting"))
	gates := value(t, ctx, "the pending gates", chromedp.Text("#awaiting"))
	for _, want := range []string{"approval of action a1.2 (step 1) · send", `"to": "dan"`, "polyloop approve suspended-1 a1.2 --allow",
		"delivery of action a1.3 (step 1) · book", `"room": "9"`} {
		if !strings.Contains(gates, want) {
			t.Errorf("the pending gates lack %q:\n%s", want, gates)
		}
	}

	// A memory run: each step's maintenance, and the view each call showed.
	runfixture.Remembering(t, st, runfixture.NewClock(runfixture.Base.Add(24*time.Hour)), runfixture.MemoryRun, "the goal")
	do(t, ctx, "a memory run", chromedp.Navigate(base+"/run?id="+runfixture.MemoryRun), chromedp.WaitVisible("#maintenance-1"))
	maint := value(t, ctx, "step 1's maintenance", chromedp.Text("#maintenance-1"))
	for _, want := range []string{"maintenance done", "operation memory.1 done · write memory-1/1~memory.1", `"value": "the goal"`} {
		if !strings.Contains(maint, want) {
			t.Errorf("step 1's maintenance lacks %q:\n%s", want, maint)
		}
	}
	if head := value(t, ctx, "step 2's call", chromedp.Text("#step-2 .callhead")); !strings.Contains(head, "showing view notes version 1") {
		t.Errorf("step 2's model call says %q", head)
	}
}

// TestBrowserPreviews drives Chromium through the page of a run this
// process drives, its model streaming: the text appears on the page while
// the call is under way, before its reply is recorded — the text streamed
// before the page opened and the text after —; a superseded attempt's text
// disappears and the next attempt's replaces it, never glued on; the
// recorded reply then takes the preview's place, without a reload. A
// screenshot of the streaming page goes to the test's artifacts (and, with
// -rewrite, to docs/view-preview.png).
func TestBrowserPreviews(t *testing.T) {
	sink := view.NewPreviewSink()
	ctx, base, st := browse(t, sink, nil)

	m := newPacedModel()
	errc := startPacedRun(st, m, sink, "streamed")
	m.send(t, polyloop.Delta{Attempt: 1, Text: "Hel"}) // before the page opens
	do(t, ctx, "open the run", chromedp.Navigate(base+"/run?id=streamed"), chromedp.WaitVisible(`pre.preview[data-call="m1.1"]`))
	value(t, ctx, "mark the page", chromedp.Evaluate[string](`window.notReloaded = "yes"`))
	preview := func(what, want string) {
		t.Helper()
		js := `(function () { var p = document.querySelector('pre.preview[data-call="m1.1"]'); return p && !p.hidden && p.textContent === ` + strconv.Quote(want) + `; })()`
		if want == "" {
			js = `(function () { var p = document.querySelector('pre.preview[data-call="m1.1"]'); return p && p.hidden && p.textContent === ""; })()`
		}
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.querySelector('pre.preview[data-call="m1.1"]') || {}).textContent || "(none)"`))
			t.Fatalf("%s: the preview shows %q, want %q (%v)", what, got, want, err)
		}
	}
	preview("the text streamed before the page opened", "Hel")
	m.send(t, polyloop.Delta{Attempt: 1, Text: "lo, "}, polyloop.Delta{Attempt: 1, Text: "wor"})
	preview("the text as it streams", "Hello, wor")
	if note := value(t, ctx, "the call's note", chromedp.Text(`#step-1 .callhead`)); !strings.Contains(note, "streaming in this process") || strings.Contains(note, "outcome unknown") {
		t.Errorf("the streaming call's head says %q", note)
	}
	if log, _ := polyloop.ReadLog(context.Background(), st, "streamed"); len(log.Records) != 2 {
		t.Fatalf("%d records while the call streams, want its intent only (run_started, model_call_intent)", len(log.Records))
	}
	saveShot(t, "preview.png", value(t, ctx, "screenshot", chromedp.CaptureScreenshot()))

	m.send(t, polyloop.Delta{Attempt: 1, Superseded: true})
	preview("the superseded attempt", "")
	m.send(t, polyloop.Delta{Attempt: 2, Text: "Hi"}, polyloop.Delta{Attempt: 2, Text: " there"})
	preview("the next attempt", "Hi there")

	m.answer(t, "Hi there")
	do(t, ctx, "the reply recorded", chromedp.WaitNotPresent(`pre.preview[data-call="m1.1"]`), chromedp.WaitVisible("#status .badge.completed"))
	reply := value(t, ctx, "the reply", chromedp.Text(`#step-1 .reply pre`))
	marker := value(t, ctx, "the mark", chromedp.Evaluate[string](`window.notReloaded || "reloaded"`))
	if reply != "Hi there" || marker != "yes" {
		t.Fatalf("after the reply: %q shown, page %s", reply, marker)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// browse serves the view of a new SQLite store, which fill writes into
// (when not nil), with previews (when not nil), to a headless Chromium:
// it returns the browser's context, the view's URL and the store. The test
// is skipped when POLYLOOP_TEST_CHROMIUM names no Chromium (.ci/run always
// names one). The browser stops before the view's server, which stops
// before the store closes.
func browse(t *testing.T, previews view.Previews, fill func(*sqlitestore.Store)) (context.Context, string, *sqlitestore.Store) {
	t.Helper()
	exe := chromium(t)
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "polyloop.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if fill != nil {
		fill(st)
	}
	ctx, url := browseView(t, exe, view.Options{Store: st, Previews: previews, Poll: 100 * time.Millisecond})
	return ctx, url, st
}

// browseView serves a view of opts and starts a Chromium: its context and
// the view's URL.
func browseView(t *testing.T, exe string, opts view.Options) (context.Context, string) {
	t.Helper()
	h, err := view.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ctx, stop := browser(t, exe)
	t.Cleanup(stop)
	return ctx, srv.URL
}

// chromium is the Chromium the browser tests drive; a test without one
// is skipped.
func chromium(t *testing.T) string {
	t.Helper()
	exe := os.Getenv(chromiumEnv)
	if exe == "" {
		t.Skipf("%s is not set (e.g. /usr/bin/chromium): the browser test needs a Chromium", chromiumEnv)
	}
	return exe
}

// browser starts a headless Chromium for the test and returns its
// context, bounded to 90 s, and what stops it (which must run before the
// page's server closes: its live pages hold connections).
func browser(t *testing.T, exe string) (context.Context, func()) {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1200, 1000),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("no-first-run", true), chromedp.Flag("disable-quic", true),
	}
	actx, stopAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, stopBrowser := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	ctx, cancel := context.WithTimeout(bctx, 90*time.Second)
	return ctx, func() { cancel(); stopBrowser(); stopAlloc() }
}

func do(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func value[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// resumeUnfinished finishes runfixture.UnfinishedRun: the replayed action,
// then the last step.
func resumeUnfinished(t *testing.T, st *sqlitestore.Store) {
	t.Helper()
	clock := runfixture.NewClock(runfixture.Base.Add(26 * time.Hour))
	r := runfixture.Runner(st, clock, 0.000001, runfixture.Echo("c1", "x"), runfixture.Echo("c2", "y"), scriptmodelReply("done"))
	if _, err := r.Resume(context.Background(), runfixture.UnfinishedRun, runfixture.Agent("beta", "You echo twice.")); err != nil {
		t.Fatalf("resume: %v", err)
	}
}

// saveShot writes a screenshot into the test's artifacts as name and, with
// -rewrite, into docs/ as view-NAME.
func saveShot(t *testing.T, name string, png []byte) {
	t.Helper()
	saveArtifact(t, name, png)
	if *rewrite {
		if err := os.WriteFile(filepath.Join("..", "docs", "view-"+name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// saveArtifact writes a screenshot into the test's artifacts.
func saveArtifact(t *testing.T, name string, png []byte) {
	t.Helper()
	if len(png) < 1000 {
		t.Fatalf("screenshot %s of %d bytes", name, len(png))
	}
	if err := os.WriteFile(filepath.Join(t.ArtifactDir(), name), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
