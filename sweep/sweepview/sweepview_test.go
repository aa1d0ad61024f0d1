package sweepview_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/sweep/sweepview"
	"github.com/polyloop/polyloop/toolcallparser"
	"github.com/polyloop/polyloop/view"
)

type noExec struct{}

func (noExec) Execute(context.Context, polyloop.Action) (polyloop.ActionOutcome, error) {
	return polyloop.ActionOutcome{Status: polyloop.NotExecuted}, nil
}

func agent(name, answer string) *sweep.Agent {
	return &sweep.Agent{Agent: polyloop.Agent{Name: name, Limits: polyloop.Limits{MaxSteps: 2}},
		Model: scriptmodel.New(scriptmodel.Reply(answer)), Parser: toolcallparser.New(toolcallparser.Options{}), Executor: noExec{}}
}

func get(t *testing.T, h http.Handler, target string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8686"+target, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", target, rec.Code, body)
	}
	return string(body)
}

// The view shows a sweep's runs with their task, epoch, attempt and score,
// and its accuracy per agent equal to sweep.ComputeStats's.
func TestViewOfASweep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tasks := sweep.TaskList{{ID: "t1", Input: "a", Target: []string{"yes"}}, {ID: "t2", Input: "b", Target: []string{"no"}},
		{ID: "t3", Input: "c", Target: []string{"yes"}}}
	s, err := sweep.New(sweep.Definition{Name: "vs", Agents: []*sweep.Agent{agent("says-yes", "yes"), agent("says-no", "no")},
		Tasks: tasks, Epochs: 2, Scorers: []sweep.Scorer{sweep.Exact("exact", sweep.MatchOptions{})}})
	if err != nil {
		t.Fatal(err)
	}
	store := memstore.New()
	if _, err := s.Run(ctx, sweep.RunOptions{Store: store}); err != nil {
		t.Fatal(err)
	}
	srv, err := view.New(view.Options{Store: store, Sweeps: sweepview.New(store)})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<th>sweep</th><th>task</th><th>score</th>", `<td>vs</td><td>t3 <span class="dim">e2</span></td>`} {
		if body := get(t, srv, "/"); !strings.Contains(body, want) {
			t.Errorf("runs list lacks %q", want)
		}
	}
	if body := get(t, srv, "/sweeps"); !strings.Contains(body, `<b><a href="/sweep?name=vs">vs</a></b>: 12 runs (3 tasks × 2 epochs × 2 agents)`) {
		t.Errorf("sweeps page:\n%s", body)
	}
	st, err := sweep.ComputeStats(ctx, store, "vs", sweep.StatsOptions{By: sweep.ByAgent})
	if err != nil {
		t.Fatal(err)
	}
	body := get(t, srv, "/stats?sweep=vs&by=agent")
	for _, g := range st.Groups {
		want := fmt.Sprintf("accuracy <b>%.3f</b> ± %.3f", g.Accuracy.Mean, *g.Accuracy.SE)
		if !strings.Contains(body, want) {
			t.Errorf("the statistics page lacks %q for agent %s", want, g.Group)
		}
	}
	if st.Groups[0].Accuracy.Mean != 2.0/3 {
		t.Errorf("says-yes accuracy %v", st.Groups[0].Accuracy.Mean)
	}
	// One group of both agents: every agent's outcome of a task and epoch
	// counts, not one of them.
	all, err := sweep.ComputeStats(ctx, store, "vs", sweep.StatsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := all.Groups[0].Accuracy
	want := fmt.Sprintf("accuracy <b>%.3f</b> ± %.3f (SE clustered by task), 95%% interval [%.3f, %.3f] over %d scored runs, %d tasks",
		a.Mean, *a.SE, *a.Low, *a.High, a.N, a.Clusters)
	if body := get(t, srv, "/stats?sweep=vs"); a.N != 12 || !strings.Contains(body, want) {
		t.Errorf("the statistics page of both agents lacks %q", want)
	}
	// A run's page shows its scores with their explanations.
	id := sweep.RunID(sweep.CoordID("vs", s.Manifest().Agents[1].Hash, "t1", 1), 1)
	body = get(t, srv, "/run?id="+id)
	if want := `<li data-scorer="exact"><b>exact</b> 0<pre class="why">equals no target</pre></li>`; !strings.Contains(body, want) {
		t.Errorf("the page of %s lacks %q", id, want)
	}
	// An unknown sweep is 404, a query it cannot answer 400.
	for target, code := range map[string]int{"/sweep?name=nope": http.StatusNotFound, "/sweep?name=vs&scorer=nope": http.StatusBadRequest,
		"/sweep?name=vs&sort=colour": http.StatusBadRequest, "/sweep?name=vs&by=day": http.StatusBadRequest, "/sweep": http.StatusBadRequest} {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8686"+target, nil))
		if rec.Code != code {
			t.Errorf("GET %s: %d, want %d", target, rec.Code, code)
		}
	}
}
