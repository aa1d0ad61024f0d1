package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/sweep/sweepview"
	"github.com/polyloop/polyloop/view"
)

// A sweep of three agents, one of which always fails its model call
// (llm_error, retried once: unscored), for the view's tests.
const viewSweepFile = `name: cli
agents: [slow.yaml, quick.yaml, fail.yaml]
tasks: tasks.csv
epochs: 2
concurrency: 4
retry: {attempts: 2, backoff_ms: 10}
scorers:
  - kind: exact
  - {name: near, kind: numeric, tolerance: 1}
`

// TestViewSweepNumbersEqualStats: every number of a sweep's page (its
// data-value, at full precision) is the number polyloop stats --sweep
// --json gives, for every grouping, and the page shows every one; its
// samples table is polyloop samples's, rows, order, scores and
// explanations.
func TestViewSweepNumbersEqualStats(t *testing.T) {
	t.Parallel()
	c := newSweepCLI(t)
	c.write("fail.yaml", "name: fail\nmodel: {provider: script, script: [{fail: \"503 service unavailable\"}]}\n")
	c.write("view.yaml", viewSweepFile)
	if code, _, stderr := c.run("sweep", "view.yaml", "-q"); code != exitOK {
		t.Fatalf("sweep: exit %d\n%s", code, stderr)
	}
	spec := "sqlite:" + filepath.Join(c.dir, "store.db")
	st, err := openStore(context.Background(), spec, existingStore)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv, err := view.New(view.Options{Store: st, Sweeps: sweepview.New(st.(sweep.Store))})
	if err != nil {
		t.Fatal(err)
	}
	for _, by := range []string{"", "agent", "hash", "task", "epoch"} {
		var stdout, stderr bytes.Buffer
		if code := execute([]string{"--store", spec, "stats", "--sweep", "cli", "--json", "--by", by}, strings.NewReader(""), &stdout, &stderr); code != exitOK {
			t.Fatalf("stats --by %q: exit %d: %s", by, code, stderr.String())
		}
		want := sweepStatsNumbers(t, stdout.Bytes())
		got := pageNumbers(t, srv, "/sweep?name=cli&by="+by)
		if len(want) < 50 {
			t.Fatalf("--by %q: too few numbers: %v", by, want)
		}
		for k, w := range want {
			g, ok := got[k]
			switch {
			case !ok:
				t.Errorf("--by %q: the page does not show %s (%s)", by, k, w)
			case !sameNumber(g, w):
				t.Errorf("--by %q: %s is %s on the page, %s in stats --sweep", by, k, g, w)
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("--by %q: the page shows %s, which stats --sweep does not give", by, k)
			}
		}
	}
	// The samples table: polyloop samples's rows, in its order.
	var stdout, stderr bytes.Buffer
	args := []string{"--store", spec, "samples", "--sweep", "cli", "--failed", "--scorer", "near", "--sort", "score", "--desc", "--json"}
	if code := execute(args, strings.NewReader(""), &stdout, &stderr); code != exitOK {
		t.Fatalf("samples: exit %d: %s", code, stderr.String())
	}
	var smp sweep.Samples
	if err := json.Unmarshal(stdout.Bytes(), &smp); err != nil {
		t.Fatal(err)
	}
	rows := pageSamples(t, srv, "/sweep?name=cli&failed=1&scorer=near&sort=score&desc=1")
	if len(rows) != len(smp.Rows) || len(rows) == 0 {
		t.Fatalf("the page's samples %v; polyloop samples has %d", rows, len(smp.Rows))
	}
	for i, r := range smp.Rows {
		want := r.RunID
		for _, name := range smp.Scorers {
			if sc, ok := r.Scores[name]; ok {
				want += " " + name + "=" + exactText(sc.Value) + ":" + sc.Explanation
			}
		}
		if rows[i] != want {
			t.Errorf("sample %d: the page has %q, polyloop samples %q", i, rows[i], want)
		}
	}
}

func exactText(v float64) string { b, _ := json.Marshal(v); return string(b) }

// sweepStatsNumbers flattens stats --sweep --json: "group/path" → number,
// with the runs' part under "group.runs/path", the sweep's own under
// "sweep/", pass@k by k, and a list of ids by its count.
func sweepStatsNumbers(t *testing.T, data []byte) map[string]string {
	t.Helper()
	var st struct {
		Epochs  json.RawMessage              `json:"epochs"`
		LeftOut json.RawMessage              `json:"left_out_runs"`
		Groups  []map[string]json.RawMessage `json:"groups"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatalf("stats --sweep --json: %v\n%s", err, data)
	}
	out := map[string]string{"sweep/epochs": string(st.Epochs), "sweep/left_out_runs": string(st.LeftOut)}
	for _, g := range st.Groups {
		var name string
		_ = json.Unmarshal(g["group"], &name)
		for k, v := range g {
			switch k {
			case "group":
			case "runs":
				var runs map[string]json.RawMessage
				_ = json.Unmarshal(v, &runs)
				for rk, rv := range runs {
					if rk != "group" && rk != "unfinished_runs" {
						flatten(out, name+".runs/", rk, rv)
					}
				}
			default:
				flatten(out, name+"/", k, v)
			}
		}
	}
	return out
}

// flatten puts a JSON value's numbers (and booleans and nulls) in out
// under prefix+path: objects by key, lists of {k, ...} by k, lists of
// strings by their count.
func flatten(out map[string]string, prefix, path string, raw json.RawMessage) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil && obj != nil {
		for k, v := range obj {
			flatten(out, prefix, path+"."+k, v)
		}
		return
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil && list != nil {
		var strs []string
		if json.Unmarshal(raw, &strs) == nil {
			out[prefix+path+".count"] = strings.TrimSpace(string(mustJSON(len(strs))))
			return
		}
		for _, item := range list {
			var e map[string]json.RawMessage
			_ = json.Unmarshal(item, &e)
			for k, v := range e {
				if k != "k" {
					flatten(out, prefix, path+"."+string(e["k"])+"."+k, v)
				}
			}
		}
		return
	}
	out[prefix+path] = string(raw)
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

// pageSamples reads the samples table of a sweep's page: per row, its run
// id and its scores, "id exact=1:why near=0:why".
func pageSamples(t *testing.T, h http.Handler, target string) []string {
	t.Helper()
	doc := pageDoc(t, h, target)
	attr := func(n *html.Node, key string) (string, bool) {
		for _, a := range n.Attr {
			if a.Key == key {
				return a.Val, true
			}
		}
		return "", false
	}
	var text func(n *html.Node) string
	text = func(n *html.Node) string {
		if n.Type == html.TextNode {
			return n.Data
		}
		var b strings.Builder
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			b.WriteString(text(c))
		}
		return b.String()
	}
	var rows []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			if id, ok := attr(n, "data-sample"); ok {
				row := id
				for td := n.FirstChild; td != nil; td = td.NextSibling {
					scorer, ok := attr(td, "data-scorer")
					if td.Type != html.ElementNode || !ok {
						continue
					}
					v, _ := attr(td, "data-value")
					why := ""
					for d := td.FirstChild; d != nil; d = d.NextSibling {
						if c, _ := attr(d, "class"); d.Type == html.ElementNode && c == "why" {
							why = text(d)
						}
					}
					row += " " + scorer + "=" + v + ":" + why
				}
				rows = append(rows, row)
				return
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return rows
}

// A sweep's page shows its samples a page at a time (Options.StepsPerPage
// rows, ?page=N): the pages, one after the other, are polyloop samples's
// rows in its order, and a page number past any bound is refused.
func TestViewSweepSamplesPaged(t *testing.T) {
	t.Parallel()
	c := newSweepCLI(t)
	c.write("fail.yaml", "name: fail\nmodel: {provider: script, script: [{fail: \"503 service unavailable\"}]}\n")
	c.write("view.yaml", viewSweepFile)
	if code, _, stderr := c.run("sweep", "view.yaml", "-q"); code != exitOK {
		t.Fatalf("sweep: exit %d\n%s", code, stderr)
	}
	spec := "sqlite:" + filepath.Join(c.dir, "store.db")
	st, err := openStore(context.Background(), spec, existingStore)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const per = 7
	srv, err := view.New(view.Options{Store: st, Sweeps: sweepview.New(st.(sweep.Store)), StepsPerPage: per})
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := execute([]string{"--store", spec, "samples", "--sweep", "cli", "--sort", "cost", "--json"}, strings.NewReader(""), &stdout, &stderr); code != exitOK {
		t.Fatalf("samples: exit %d: %s", code, stderr.String())
	}
	var smp sweep.Samples
	if err := json.Unmarshal(stdout.Bytes(), &smp); err != nil {
		t.Fatal(err)
	}
	pages := (len(smp.Rows) + per - 1) / per
	if pages < 3 {
		t.Fatalf("%d samples: too few for pages of %d", len(smp.Rows), per)
	}
	var all []string
	for p := 1; p <= pages+1; p++ {
		rows := pageSamples(t, srv, fmt.Sprintf("/sweep?name=cli&sort=cost&page=%d", p))
		if len(rows) > per {
			t.Fatalf("page %d has %d samples, more than %d", p, len(rows), per)
		}
		for _, r := range rows {
			all = append(all, strings.Fields(r)[0])
		}
	}
	if len(all) != len(smp.Rows) {
		t.Fatalf("the pages show %d samples, polyloop samples %d", len(all), len(smp.Rows))
	}
	for i, r := range smp.Rows {
		if all[i] != r.RunID {
			t.Errorf("sample %d: the pages have %s, polyloop samples %s", i, all[i], r.RunID)
		}
	}
	body := pageBody(t, srv, "/sweep?name=cli&sort=cost&page=2")
	if !strings.Contains(body, fmt.Sprintf("page 2 of %d", pages)) || !strings.Contains(body, "page=3") {
		t.Errorf("page 2 does not say where it is or link the next:\n%s", body)
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/sweep?name=cli&page=288230376151711744", nil))
	if rec.Code != http.StatusBadRequest {
		t.Errorf("a huge page: %d, want 400", rec.Code)
	}
	rec = httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/sweep?name=cli&sort=bogus", nil))
	if body := html.UnescapeString(rec.Body.String()); rec.Code != http.StatusBadRequest || !strings.Contains(body, `sort="bogus": expected one of run, score`) {
		t.Errorf("an unknown sort: %d, want 400 naming the parameter:\n%s", rec.Code, body)
	}
}

func pageBody(t *testing.T, h http.Handler, target string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1"+target, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("%s: %d\n%s", target, rec.Code, rec.Body)
	}
	return rec.Body.String()
}
