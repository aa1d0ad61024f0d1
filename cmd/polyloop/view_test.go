package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/polyloop/polyloop/internal/runfixture"
	"github.com/polyloop/polyloop/sqlitestore"
	"github.com/polyloop/polyloop/view"
)

// populatedStore is a SQLite store holding runfixture's runs.
func populatedStore(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "polyloop.db")
	st, err := sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	runfixture.Populate(t, st)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return "sqlite:" + path
}

// TestViewNumbersEqualStats: every number the statistics page shows (its
// data-value, at full precision) is the number polyloop stats --json gives
// for the same selection, group by group, and the page shows every one.
func TestViewNumbersEqualStats(t *testing.T) {
	t.Parallel()
	spec := populatedStore(t)
	st, err := openStore(context.Background(), spec, existingStore)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv, err := view.New(view.Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ flags, query string }{
		{"", ""},
		{"--by agent", "by=agent"},
		{"--by hash", "by=hash"},
		{"--agent beta", "agent=beta"},
		{"--unfinished", "status=unfinished"},
		{"--stop-reason completed --by agent", "stop=completed&by=agent"},
		{"--task Echo --by hash", "task=Echo&by=hash"},
		{"--by snapshot", "by=snapshot"},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"--store", spec, "stats", "--json"}, strings.Fields(tc.flags)...)
		if code := execute(args, strings.NewReader(""), &stdout, &stderr); code != exitOK {
			t.Fatalf("stats %s: exit %d: %s", tc.flags, code, stderr.String())
		}
		want := statsNumbers(t, stdout.Bytes())
		got := pageNumbers(t, srv, "/stats?"+tc.query)
		if len(want) == 0 {
			t.Fatalf("stats %s: no numbers", tc.flags)
		}
		for k, w := range want {
			g, ok := got[k]
			switch {
			case !ok:
				t.Errorf("stats %s: the page does not show %s (%s)", tc.flags, k, w)
			case !sameNumber(g, w):
				t.Errorf("stats %s: %s is %s on the page, %s in polyloop stats", tc.flags, k, g, w)
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("stats %s: the page shows %s, which polyloop stats does not give", tc.flags, k)
			}
		}
	}
}

func sameNumber(a, b string) bool {
	if a == "null" || b == "null" || a == "true" || a == "false" {
		return a == b
	}
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	return err1 == nil && err2 == nil && x == y
}

// statsNumbers flattens stats --json: "group/field" → number.
func statsNumbers(t *testing.T, data []byte) map[string]string {
	t.Helper()
	var groups []map[string]json.RawMessage
	if err := json.Unmarshal(data, &groups); err != nil {
		t.Fatalf("stats --json: %v\n%s", err, data)
	}
	out := map[string]string{}
	for _, g := range groups {
		var name string
		_ = json.Unmarshal(g["group"], &name)
		for _, k := range []string{"runs", "finished", "unfinished", "awaiting", "tokens_unknown_runs", "cost_unknown_runs", "unknown_model_calls", "unknown_actions"} {
			out[name+"/"+k] = string(g[k])
		}
		for _, k := range []string{"reconciled_runs", "reconciled_completed"} {
			out[name+"/"+k] = string(g[k])
		}
		for _, sp := range []string{"spend", "unfinished_spend", "reconciled"} {
			var spend map[string]json.RawMessage
			_ = json.Unmarshal(g[sp], &spend)
			for k, v := range spend {
				out[name+"/"+sp+"."+k] = string(v)
			}
		}
		var reasons map[string]json.RawMessage
		_ = json.Unmarshal(g["stop_reasons"], &reasons)
		for r, n := range reasons {
			out[name+"/stop_reasons."+r] = string(n)
		}
		for _, d := range []string{"steps", "tokens", "cost_usd"} {
			var dist map[string]json.RawMessage
			_ = json.Unmarshal(g[d], &dist)
			for k, v := range dist {
				out[name+"/"+d+"."+k] = string(v)
			}
		}
	}
	return out
}

// pageDoc gets a page of h and parses it.
func pageDoc(t *testing.T, h http.Handler, target string) *html.Node {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+target, nil))
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", target, rec.Code, body)
	}
	doc, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// pageNumbers reads the page's data-stat numbers: "group/field" → number.
func pageNumbers(t *testing.T, h http.Handler, target string) map[string]string {
	t.Helper()
	doc := pageDoc(t, h, target)
	out := map[string]string{}
	var walk func(n *html.Node, group string)
	walk = func(n *html.Node, group string) {
		if n.Type == html.ElementNode {
			attrs := map[string]string{}
			for _, a := range n.Attr {
				attrs[a.Key] = a.Val
			}
			if g, ok := attrs["data-group"]; ok {
				group = g
			}
			if k, ok := attrs["data-stat"]; ok {
				if _, dup := out[group+"/"+k]; dup {
					t.Errorf("%s: %s/%s shown twice", target, group, k)
				}
				out[group+"/"+k] = attrs["data-value"]
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, group)
		}
	}
	walk(doc, "")
	return out
}

// TestViewCommand: polyloop view serves the store on the address it
// prints and stops cleanly when its context ends; a bad address or a
// missing store is an error before anything is served.
func TestViewCommand(t *testing.T) {
	t.Parallel()
	spec := populatedStore(t)
	pr, pw := io.Pipe()
	a := &app{stdin: strings.NewReader(""), stdout: pw, stderr: io.Discard, store: spec}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.view(ctx, &viewFlags{addr: "127.0.0.1:0", poll: time.Second}) }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, pr)
	_, rest, ok := strings.Cut(line, " on http://")
	if !ok {
		t.Fatalf("view printed %q", line)
	}
	url := "http://" + strings.Fields(rest)[0]
	res, err := http.Get(url + "run?id=" + runfixture.BatchRun)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), `id="step-3"`) {
		t.Errorf("GET %s: %d", url, res.StatusCode)
	}
	// The store keeps sweeps: the runs list has the sweep columns.
	if res, err = http.Get(url); err == nil {
		body, _ = io.ReadAll(res.Body)
		res.Body.Close()
	}
	if err != nil || !strings.Contains(string(body), "<th>sweep</th><th>task</th><th>score</th>") {
		t.Errorf("GET %s: %v; no sweep columns", url, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("view after its context ended: %v", err)
	}
	pw.Close()

	for _, args := range [][]string{
		{"--store", spec, "view", "--addr", "127.0.0.1:http-ish"},
		{"--store", "sqlite:" + t.TempDir() + "/none.db", "view"},
		{"--store", spec, "view", "--poll", "0s"},
	} {
		var stderr bytes.Buffer
		if code := execute(args, strings.NewReader(""), io.Discard, &stderr); code != exitError || stderr.Len() == 0 {
			t.Errorf("%q: exit %d, stderr %q", args, code, stderr.String())
		}
	}
}
