package main

import (
	"context"
	"html"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

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
