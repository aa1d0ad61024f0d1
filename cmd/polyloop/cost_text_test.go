package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"html"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/sweep/sweepview"
	"github.com/polyloop/polyloop/view"
)

// An unknown cost is "cost unknown", never $0, and a sum with unknown
// parts is a lower bound only when some of it is known; a known small
// cost shows its digits ("$0.000014"), never "$0.0000" nor "$1.4e-05".
// The sweep's "slow" agent has no price (every cost unknown); "quick"
// costs a millionth of a dollar a token (a few hundred-thousandths a
// run).
func TestSweepCostText(t *testing.T) {
	t.Parallel()
	c := newSweepCLI(t)
	if code, _, stderr := c.run("sweep", "sweep.yaml", "-q"); code != exitOK {
		t.Fatal(stderr)
	}
	code, out, stderr := c.run("stats", "--sweep", "cli", "--by", "agent")
	if code != exitOK {
		t.Fatalf("stats: exit %d\n%s", code, stderr)
	}
	slow, quick, _ := strings.Cut(out, "agent quick:")
	if !strings.Contains(slow, "  sums: ") || !regexp.MustCompile(`(?m)^  sums: .*, cost unknown$`).MatchString(slow) {
		t.Errorf("an agent none of whose cost is known:\n%s", slow)
	}
	if !regexp.MustCompile(`(?m)^  sums: \d+ tokens, \$0\.0001\d*$`).MatchString(quick) {
		t.Errorf("an agent of known small costs:\n%s", quick)
	}
	for _, bad := range []string{"$0 ", "$0.0000 ", "e-0", "partly unknown"} {
		if strings.Contains(out, bad) {
			t.Errorf("stats shows %q:\n%s", bad, out)
		}
	}
	for _, args := range [][]string{{"samples", "--sweep", "cli"}, {"ls"}} {
		code, out, stderr := c.run(args...)
		if code != exitOK {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr)
		}
		if strings.Contains(out, "$0.0000 ") || strings.Contains(out, "e-0") || !regexp.MustCompile(`\$0\.0000[1-9]`).MatchString(out) {
			t.Errorf("%v: a known small cost unreadable:\n%s", args, out)
		}
	}
}

// The sweep's page says the sums as stats --sweep does, says nothing of
// "0 runs partly unknown", and draws the costs of "quick", all the same,
// as one bar labelled with that cost.
func TestViewSweepCostText(t *testing.T) {
	t.Parallel()
	c := newSweepCLI(t)
	if code, _, stderr := c.run("sweep", "sweep.yaml", "-q"); code != exitOK {
		t.Fatal(stderr)
	}
	st, err := openStore(context.Background(), "sqlite:"+filepath.Join(c.dir, "store.db"), existingStore)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	srv, err := view.New(view.Options{Store: st, Sweeps: sweepview.New(st.(sweep.Store))})
	if err != nil {
		t.Fatal(err)
	}
	body := html.UnescapeString(pageBody(t, srv, "/sweep?name=cli&by=agent"))
	slow, quick, _ := strings.Cut(body, `data-group="quick"`)
	tags := regexp.MustCompile(`<[^>]*>`)
	spend := func(part string) string {
		_, p, _ := strings.Cut(part, `<p class="spend">`)
		p, _, _ = strings.Cut(p, "</p>")
		return strings.Join(strings.Fields(tags.ReplaceAllString(p, "")), " ")
	}
	if got := spend(slow); !strings.HasSuffix(got, ", cost unknown (10 runs)") {
		t.Errorf("slow's sums: %q", got)
	}
	if got := spend(quick); !regexp.MustCompile(`^sums over every run: 140 tokens, \$0\.00014$`).MatchString(got) {
		t.Errorf("quick's sums: %q", got)
	}
	if text := tags.ReplaceAllString(body, ""); strings.Contains(text, "(0 runs partly unknown") || strings.Contains(text, "e-05") {
		t.Errorf("the page says nothing of 0 runs, nor a cost in scientific notation:\n%s", body)
	}
	if !strings.Contains(quick, "<title>$0.000014: 10 runs</title>") {
		t.Errorf("quick's costs, all $0.000014: no single bar labelled with it:\n%s", quick)
	}
}

// samples --parquet, --csv and --json leave a cost none of which is known
// null (an optional Parquet column, an empty CSV cell, JSON null), so a
// sum over the column does not count it as $0; a known cost is a number.
func TestSamplesUnknownCostIsNull(t *testing.T) {
	t.Parallel()
	c := newSweepCLI(t)
	if code, _, stderr := c.run("sweep", "sweep.yaml", "-q"); code != exitOK {
		t.Fatal(stderr)
	}
	pq := filepath.Join(c.dir, "samples.parquet")
	if code, _, stderr := c.run("samples", "--sweep", "cli", "--parquet", pq); code != exitOK {
		t.Fatalf("samples --parquet: exit %d\n%s", code, stderr)
	}
	if schema := parquetSchema(t, pq); !strings.Contains(schema, "optional double cost_usd;") {
		t.Errorf("Parquet schema: cost_usd not optional:\n%s", schema)
	}
	rows, err := parquet.ReadFile[any](pq)
	if err != nil || len(rows) != 20 {
		t.Fatalf("reading the Parquet file back: %d rows, %v", len(rows), err)
	}
	for _, row := range rows {
		r := row.(map[string]any)
		cost, isNum := r["cost_usd"].(float64)
		switch r["agent"] {
		case "slow": // no price: every cost unknown
			if r["cost_usd"] != nil || r["cost_unknown"] != true {
				t.Errorf("slow's row: cost_usd %v (cost_unknown %v), want null", r["cost_usd"], r["cost_unknown"])
			}
		case "quick":
			if !isNum || cost <= 0 || r["tokens"] == nil {
				t.Errorf("quick's row: cost_usd %v, tokens %v, want numbers", r["cost_usd"], r["tokens"])
			}
		}
	}
	_, out, _ := c.run("samples", "--sweep", "cli", "--csv")
	recs, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(recs) != 21 {
		t.Fatalf("--csv: %v\n%s", err, out)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, rec := range recs[1:] {
		if empty := rec[col["cost_usd"]] == ""; empty != (rec[col["agent"]] == "slow") {
			t.Errorf("CSV row of %s: cost_usd %q", rec[col["agent"]], rec[col["cost_usd"]])
		}
	}
	_, out, _ = c.run("samples", "--sweep", "cli", "--json")
	var doc struct {
		Rows []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Rows) != 20 {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	for _, r := range doc.Rows {
		if isNull := r["cost_usd"] == nil; isNull != (r["agent"] == "slow") {
			t.Errorf("JSON row of %s: cost_usd %v", r["agent"], r["cost_usd"])
		}
	}
}
