package view_test

import (
	"context"
	"flag"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/polyloop/polyloop/internal/runfixture"
	"github.com/polyloop/polyloop/sqlitestore"
	"github.com/polyloop/polyloop/view"
)

var rewrite = flag.Bool("rewrite", false, "write the browser test's trajectory screenshot to docs/view-trajectory.png too")

// chromiumEnv names the Chromium the browser test drives; .ci/run sets it.
const chromiumEnv = "POLYLOOP_TEST_CHROMIUM"

// TestBrowser drives Debian's Chromium, headless, through the view of a
// SQLite store: the runs list, a filter, a click into an unfinished run,
// its trajectory following the log while a resume appends records, a
// comparison of two runs chosen in the list; a screenshot of the
// trajectory goes to the test's artifacts.
func TestBrowser(t *testing.T) {
	exe := os.Getenv(chromiumEnv)
	if exe == "" {
		t.Skipf("%s is not set (e.g. /usr/bin/chromium): the browser test needs a Chromium", chromiumEnv)
	}
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "polyloop.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runfixture.Populate(t, st)
	h, err := view.New(view.Options{Store: st, Poll: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1200, 1000),
		chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("no-first-run", true), chromedp.Flag("disable-quic", true),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 90*time.Second)
	defer cancel()

	// The list, newest first.
	do(t, ctx, "open the list", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible("#runs"))
	if rows := value(t, ctx, "count the runs", chromedp.Evaluate[int](`document.querySelectorAll("#runs a.runlink").length`)); rows != 7 {
		t.Fatalf("the list shows %d runs, want 7", rows)
	}
	// Filter: agent beta, unfinished; the URL holds the state.
	do(t, ctx, "filter", chromedp.SendKeys(`input[name="agent"]`, "beta"),
		chromedp.SetValue(`select[name="status"]`, "unfinished"), chromedp.Click("#apply"),
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
	saveShot(t, value(t, ctx, "screenshot", chromedp.CaptureScreenshot()))

	// Compare two runs chosen in the list.
	do(t, ctx, "compare", chromedp.Navigate(srv.URL+"/?agent=beta"), chromedp.WaitVisible("#runs"),
		chromedp.Click(`input[name="a"][value="`+runfixture.OverriddenRun+`"]`),
		chromedp.Click(`input[name="b"][value="`+runfixture.UnfinishedRun+`"]`),
		chromedp.Click("#compare"), chromedp.WaitVisible("#divergence"))
	divergence := value(t, ctx, "divergence", chromedp.Text("#divergence"))
	url = value(t, ctx, "location", chromedp.Location())
	u, err := neturl.Parse(url)
	if err != nil || u.Path != "/compare" || u.Query().Get("a") != runfixture.OverriddenRun || u.Query().Get("b") != runfixture.UnfinishedRun ||
		!strings.Contains(divergence, "First divergence") {
		t.Fatalf("compare page %s: %q", url, divergence)
	}
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

// saveShot writes the screenshot into the test's artifacts and, with
// -rewrite, into docs/.
func saveShot(t *testing.T, png []byte) {
	t.Helper()
	if len(png) < 1000 {
		t.Fatalf("screenshot of %d bytes", len(png))
	}
	if err := os.WriteFile(filepath.Join(t.ArtifactDir(), "trajectory.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	if *rewrite {
		if err := os.WriteFile(filepath.Join("..", "docs", "view-trajectory.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
