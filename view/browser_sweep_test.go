package view_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/sqlitestore"
	"github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/sweep/sweepview"
	"github.com/polyloop/polyloop/toolcallparser"
	"github.com/polyloop/polyloop/view"
)

// TestBrowserSweep drives Chromium through a sweep's page: the sweeps
// page links to it, its samples table sorts by score on a click of the
// scorer's header (ascending, then descending), and the failed filter
// keeps the wrong answers with their explanations.
func TestBrowserSweep(t *testing.T) {
	exe := chromium(t)
	st, err := sqlitestore.Open(filepath.Join(t.TempDir(), "polyloop.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	says := func(name, answer string) *sweep.Agent {
		return &sweep.Agent{Agent: polyloop.Agent{Name: name, Limits: polyloop.Limits{MaxSteps: 2}},
			Model: scriptmodel.New(scriptmodel.Reply(answer)), Parser: toolcallparser.New(toolcallparser.Options{}), Executor: noActions{}}
	}
	tasks := sweep.TaskList{{ID: "t1", Input: "a", Target: []string{"yes"}}, {ID: "t2", Input: "b", Target: []string{"no"}}}
	s, err := sweep.New(sweep.Definition{Name: "bs", Agents: []*sweep.Agent{says("says-yes", "yes"), says("says-no", "no")}, Tasks: tasks,
		Scorers: []sweep.Scorer{sweep.Exact("exact", sweep.MatchOptions{})}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(context.Background(), sweep.RunOptions{Store: st}); err != nil {
		t.Fatal(err)
	}
	ctx, base := browseView(t, exe, view.Options{Store: st, Sweeps: sweepview.New(st)})

	scores := func(what string) []string {
		t.Helper()
		return value(t, ctx, what, chromedp.Evaluate[[]string](
			`Array.from(document.querySelectorAll("#samples-table tbody tr[data-sample] td.score")).map(td => td.dataset.value)`))
	}
	do(t, ctx, "open the sweeps", chromedp.Navigate(base+"/sweeps"), chromedp.Click(`a[href="/sweep?name=bs"]`), chromedp.WaitVisible("#samples-table"))
	if got := scores("the samples"); len(got) != 4 {
		t.Fatalf("the samples table has %d scores, want 4", len(got))
	}
	do(t, ctx, "sort by score", chromedp.Click("a.sort-score"))
	do(t, ctx, "the page sorted", chromedp.WaitVisible("a.sort-score.asc"))
	if got := scores("sorted"); strings.Join(got, ",") != "0,0,1,1" {
		t.Fatalf("sorted by score: %v", got)
	}
	do(t, ctx, "sort by score, descending", chromedp.Click("a.sort-score"))
	do(t, ctx, "the page sorted down", chromedp.WaitVisible("a.sort-score.desc"))
	url := value(t, ctx, "location", chromedp.Location())
	if got := scores("sorted down"); strings.Join(got, ",") != "1,1,0,0" || !strings.Contains(url, "desc=1") || !strings.Contains(url, "sort=score") {
		t.Fatalf("sorted by score descending: %v at %s", got, url)
	}
	do(t, ctx, "failed only", chromedp.Click(`input[name="failed"]`), chromedp.Click(`form.filters button`))
	do(t, ctx, "the page filtered", chromedp.WaitVisible(`input[name="failed"][checked]`))
	why := value(t, ctx, "explanations", chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll("#samples-table tbody td.score .why")).map(d => d.textContent)`))
	if got := scores("failed"); strings.Join(got, ",") != "0,0" || len(why) != 2 || why[0] != "equals no target" {
		t.Fatalf("failed: scores %v, explanations %q", got, why)
	}
}

type noActions struct{}

func (noActions) Execute(context.Context, polyloop.Action) (polyloop.ActionOutcome, error) {
	return polyloop.ActionOutcome{Status: polyloop.NotExecuted}, nil
}
