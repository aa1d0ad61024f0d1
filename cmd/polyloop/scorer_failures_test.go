package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"html"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/sweep/sweepview"
	"github.com/polyloop/polyloop/view"
)

// stats --sweep says which scorers failed on how many outcomes, with the
// first error cut to a line, in text and JSON; a comparison on a scorer
// that failed everywhere says why it has no pair.
func TestSweepStatsScorerFailures(t *testing.T) {
	t.Parallel()
	c := newSweepCLI(t)
	c.write("sweep.yaml", strings.Replace(sweepFile, "  - {name: near, kind: numeric, tolerance: 1}\n",
		`  - {name: broken, kind: command, command: [sh, -c, 'head -c 600 /dev/zero | tr "\0" x >&2; echo >&2; echo "ModuleNotFoundError: grader" >&2; exit 7']}`+"\n", 1))
	if code, stdout, stderr := c.run("sweep", "sweep.yaml", "-q"); code != exitStopped {
		t.Fatalf("sweep: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, out, stderr := c.run("stats", "--sweep", "cli", "--by", "agent", "--json")
	var st sweep.Stats
	if code != exitOK || json.Unmarshal([]byte(out), &st) != nil || len(st.Groups) != 2 {
		t.Fatalf("stats --json: exit %d\n%s\n%s", code, out, stderr)
	}
	for _, g := range st.Groups {
		if len(g.ScorerFailures) != 1 {
			t.Fatalf("group %s: scorer failures %+v; want broken's", g.Group, g.ScorerFailures)
		}
		f := g.ScorerFailures[0]
		if f.Scorer != "broken" || f.Outcomes != 10 || !strings.HasPrefix(f.FirstRun, "cli.") ||
			!strings.Contains(f.FirstError, "exited with status 7") || !strings.HasSuffix(f.FirstError, "ModuleNotFoundError: grader") ||
			len(f.FirstError) > sweep.MaxFailureText {
			t.Errorf("group %s: %+v", g.Group, f)
		}
	}
	_, out, _ = c.run("stats", "--sweep", "cli", "--by", "agent")
	if n := strings.Count(out, "  scorer broken failed on 10 outcomes; the first (run cli."); n != 2 {
		t.Errorf("text: %d lines of broken's failures, want one a group:\n%s", n, out)
	}
	code, out, stderr = c.run("stats", "--sweep", "cli", "--scorer", "broken", "--compare", "slow", "quick")
	if code != exitOK || !strings.Contains(out, "\n  0 pairs: 20 outcomes of scorer broken failed: ") || !strings.Contains(out, "exited with status 7") {
		t.Errorf("--compare on a scorer that failed everywhere: exit %d\n%s\n%s", code, out, stderr)
	}
	_, out, _ = c.run("stats", "--sweep", "cli", "--scorer", "broken", "--compare", "slow", "quick", "--json")
	var cmp sweep.Comparison
	if json.Unmarshal([]byte(out), &cmp) != nil || cmp.Pairs != 0 || cmp.ScorerFailures.Outcomes != 20 || cmp.ScorerFailures.FirstError == "" {
		t.Errorf("--compare --json: %+v\n%s", cmp, out)
	}
	_, out, _ = c.run("stats", "--sweep", "cli", "--scorer", "broken", "--compare", "slow", "quick", "--csv")
	if recs, err := csv.NewReader(strings.NewReader(out)).ReadAll(); err != nil || len(recs) < 2 || recs[0][0] != "task" || recs[1][0] != "all" {
		t.Errorf("--compare --csv is not the table alone (%v):\n%s", err, out)
	}
	ls, err := openStore(context.Background(), "sqlite:"+filepath.Join(c.dir, "store.db"), existingStore)
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	srv, err := view.New(view.Options{Store: ls, Sweeps: sweepview.New(ls.(sweep.Store))})
	if err != nil {
		t.Fatal(err)
	}
	page := html.UnescapeString(pageBody(t, srv, "/sweep?name=cli"))
	if !strings.Contains(page, `scorer broken failed on <span data-stat="scorer_failures.broken.outcomes" data-value="20">20</span> outcomes`) ||
		!strings.Contains(page, "ModuleNotFoundError: grader</span>") {
		t.Errorf("the sweep's page does not say broken failed on 20 outcomes, and why")
	}
}
