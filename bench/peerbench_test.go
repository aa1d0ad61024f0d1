package bench_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polyloop/polyloop/bench"
)

// fakePeers is a peers program: PolyLoop and "fake" in memory, PolyLoop
// alone in SQLite; fake takes 3 times PolyLoop's time and twice its
// allocations. It logs its arguments.
const fakePeers = `#!/bin/sh
echo "$*" >> "$(dirname "$0")/calls.log"
case "$*" in
-list) echo '[{"runtime":"fake","version":"v9","stores":["memory"]},{"runtime":"polyloop","version":"(this tree)","stores":["memory","sqlite"]}]' ;;
*"-runtime polyloop"*) echo '{"runtime":"polyloop","store":"memory","steps":4,"wall_ns":5000,"cpu_ns":5000,"mallocs":50,"peak_rss_kb":1000}' ;;
*"-runtime fake"*) echo '{"runtime":"fake","store":"memory","steps":4,"wall_ns":15000,"cpu_ns":10000,"mallocs":100,"peak_rss_kb":2000}' ;;
esac
`

func writeProgram(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "peers")
	if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// RunPeers pairs PolyLoop with each peer that keeps runs in a store,
// alternates which runs first, and gives each figure's ratio; a store no
// peer keeps runs in is noted.
func TestRunPeers(t *testing.T) {
	t.Parallel()
	prog := writeProgram(t, fakePeers)
	rep, err := bench.RunPeers(context.Background(), bench.PeerOptions{Program: prog, Stores: []string{"memory", "sqlite"}, Steps: 4, Reps: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Comparisons) != 1 || rep.Comparisons[0].Peer != "fake" || rep.Comparisons[0].Store != "memory" || rep.Comparisons[0].Version != "v9" {
		t.Fatalf("comparisons %+v; want PolyLoop and fake in memory", rep.Comparisons)
	}
	want := map[string][3]float64{ // PolyLoop, fake, ratio
		"time_per_step": {1, 3, 3}, "cpu_per_step": {1, 2, 2}, "allocs_per_step": {10, 20, 2}, "peak_rss": {1.024, 2.048, 2},
	}
	rows := rep.Comparisons[0].Rows
	if len(rows) != len(want) {
		t.Fatalf("%d figures, want %d (no stored bytes in memory): %+v", len(rows), len(want), rows)
	}
	for _, r := range rows {
		w := want[r.ID]
		if r.PolyLoop.Median != w[0] || r.Peer.Median != w[1] || r.Ratio.Median != w[2] || r.Ratio.N != 2 {
			t.Errorf("%s: PolyLoop %v, fake %v, ratio %v (n=%d); want %v", r.ID, r.PolyLoop.Median, r.Peer.Median, r.Ratio.Median, r.Ratio.N, w)
		}
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "store sqlite: no peer") {
		t.Errorf("notes %q: want one for SQLite", rep.Notes)
	}
	calls, err := os.ReadFile(filepath.Join(filepath.Dir(prog), "calls.log"))
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, line := range strings.Split(strings.TrimSpace(string(calls)), "\n")[1:] {
		order = append(order, strings.Fields(line)[1])
	}
	if strings.Join(order, " ") != "polyloop fake fake polyloop" {
		t.Errorf("runs in the order %v; want PolyLoop and the peer alternately first", order)
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"memory: PolyLoop (this tree) and fake v9", "fake ÷ PolyLoop", "3.00 (3.00 – 3.00)"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("the text report lacks %q:\n%s", s, text.String())
		}
	}
}

// A program whose answer is not the measurement asked for fails RunPeers.
func TestRunPeersWrongAnswer(t *testing.T) {
	t.Parallel()
	prog := writeProgram(t, strings.Replace(fakePeers, `"steps":4,"wall_ns":15000`, `"steps":5,"wall_ns":15000`, 1))
	_, err := bench.RunPeers(context.Background(), bench.PeerOptions{Program: prog, Stores: []string{"memory"}, Steps: 4, Reps: 1})
	if err == nil || !strings.Contains(err.Error(), "answered") {
		t.Fatalf("err = %v; want the wrong answer refused", err)
	}
}
