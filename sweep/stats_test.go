package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/sweep/ledger"
)

// putRun writes a run that finished with reason.
func putRun(t *testing.T, store *memstore.Store, id string, reason polyloop.StopReason) {
	t.Helper()
	snap := polyloop.Snapshot{Agent: "a", Task: polyloop.Task{Input: "x"}}
	h, _ := snap.Hash()
	at := time.Unix(1700000000, 0).UTC()
	err := polyloop.AppendRecords(context.Background(), store, id,
		polyloop.Record{Seq: 0, At: at, Body: &polyloop.RunStarted{RunID: id, Snapshot: snap, SnapshotHash: h, LibraryVersion: polyloop.LibraryVersion}},
		polyloop.Record{Seq: 1, At: at, Body: &polyloop.RunFinished{StopReason: reason,
			Totals: polyloop.Totals{Steps: 1, ModelCalls: 1, InputTokens: 10, OutputTokens: 5, CostUSD: 0.5}}})
	if err != nil {
		t.Fatal(err)
	}
}

// handSweep records a sweep of one agent, tasks a, b, c and 2 epochs:
//
//	a: e1 1, e2 1
//	b: e1 1, e2 llm_error then 0 (attempt 2)
//	c: e1 0, e2 llm_error three times (out of attempts: unscored)
func handSweep(t *testing.T) *memstore.Store {
	t.Helper()
	ctx := context.Background()
	store := memstore.New()
	m := Manifest{Name: "s", Agents: []AgentManifest{{Name: "a", Hash: "sha256:aaaa"}}, Epochs: 2,
		Retry: RetryPolicy{On: DefaultRetryOn, Attempts: 3}, Scorers: []ScorerManifest{{Name: "exact"}}}
	b, _ := json.Marshal(m)
	if err := store.PutSweep(ctx, ledger.Sweep{Name: "s", Manifest: b, UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	type run struct {
		task         string
		epoch, tries int
		last         polyloop.StopReason
		score        float64
		scored       bool
	}
	for _, r := range []run{
		{"a", 1, 1, polyloop.StopCompleted, 1, true}, {"a", 2, 1, polyloop.StopCompleted, 1, true},
		{"b", 1, 1, polyloop.StopCompleted, 1, true}, {"b", 2, 2, polyloop.StopCompleted, 0, true},
		{"c", 1, 1, polyloop.StopCompleted, 0, true}, {"c", 2, 3, polyloop.StopLLMError, 0, false},
	} {
		coord := CoordID("s", "sha256:aaaa", r.task, r.epoch)
		for attempt := 1; attempt <= r.tries; attempt++ {
			e := ledger.Entry{RunID: RunID(coord, attempt), Sweep: "s", Coord: coord, Agent: "a", AgentHash: "sha256:aaaa",
				TaskID: r.task, Epoch: r.epoch, Attempt: attempt, Task: json.RawMessage(`{}`), TaskDigest: "d"}
			if attempt > 1 {
				e.Previous = RunID(coord, attempt-1)
			}
			if err := store.AddEntries(ctx, []ledger.Entry{e}); err != nil {
				t.Fatal(err)
			}
			reason := polyloop.StopLLMError
			if attempt == r.tries {
				reason = r.last
			}
			putRun(t, store, e.RunID, reason)
			if attempt == r.tries && r.scored {
				if err := store.PutScores(ctx, []ledger.Score{{RunID: e.RunID, Scorer: "exact", Value: r.score, ScoredAt: time.Now()}}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return store
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// The statistics of handSweep, checked against a hand computation.
func TestStatsByHand(t *testing.T) {
	t.Parallel()
	st, err := ComputeStats(context.Background(), handSweep(t), "s", StatsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Groups) != 1 {
		t.Fatalf("groups %+v", st.Groups)
	}
	g := st.Groups[0]
	if g.Outcomes != 6 || g.Settled != 6 || g.Scored != 5 || g.Unscored != 1 || len(g.Unsettled) != 0 {
		t.Errorf("outcomes %d settled %d scored %d unscored %d unsettled %v", g.Outcomes, g.Settled, g.Scored, g.Unscored, g.Unsettled)
	}
	if g.OutcomeStopReasons[polyloop.StopCompleted] != 5 || g.OutcomeStopReasons[polyloop.StopLLMError] != 1 {
		t.Errorf("outcome stop reasons %v", g.OutcomeStopReasons)
	}
	if a := g.Attempts; a[polyloop.StopCompleted]["1"] != 4 || a[polyloop.StopCompleted]["2"] != 1 || a[polyloop.StopLLMError]["3"] != 1 {
		t.Errorf("attempts %v", a)
	}
	// Every attempt counts as a run: 6 + 1 + 2.
	if g.Runs.Runs != 9 || g.Runs.StopReasons[polyloop.StopLLMError] != 4 || g.TokensSum != 9*15 || !near(g.CostSum, 4.5) {
		t.Errorf("runs %+v, tokens %d, cost %v", g.Runs, g.TokensSum, g.CostSum)
	}
	// Scores 1 1 | 1 0 | 0: mean 0.6; residual sums by task a +0.8,
	// b −0.2, c −0.6; SE² = 3/2 · (0.64 + 0.04 + 0.36) / 5² = 0.0624.
	acc := g.Accuracy
	if acc == nil || acc.N != 5 || acc.Clusters != 3 || !near(acc.Mean, 0.6) || acc.SE == nil || !near(*acc.SE, math.Sqrt(0.0624)) {
		t.Fatalf("accuracy %+v", acc)
	}
	if !near(*acc.Low, 0.6-1.96*math.Sqrt(0.0624)) || !near(*acc.High, 0.6+1.96*math.Sqrt(0.0624)) {
		t.Errorf("interval [%v, %v]", *acc.Low, *acc.High)
	}
	// pass@1: a 2/2 → 1, b 1/2 → 1 − C(1,1)/C(2,1) = 0.5, c 0/1 → 0:
	// mean 0.5, SE = sqrt(((0.5² + 0 + 0.5²) / 2) / 3). pass@2 over the
	// pairs with 2 scored epochs, a and b: 1 and 1 − C(1,2)/C(2,2) = 1.
	if len(g.PassAtK) != 2 {
		t.Fatalf("pass@k %+v", g.PassAtK)
	}
	p1, p2 := g.PassAtK[0], g.PassAtK[1]
	if p1.K != 1 || p1.Pairs != 3 || !near(p1.Mean, 0.5) || p1.SE == nil || !near(*p1.SE, math.Sqrt(0.25/3)) {
		t.Errorf("pass@1 %+v (SE %v)", p1, p1.SE)
	}
	if p2.K != 2 || p2.Pairs != 2 || !near(p2.Mean, 1) || p2.SE == nil || *p2.SE != 0 {
		t.Errorf("pass@2 %+v", p2)
	}
}

func TestStatsGroupings(t *testing.T) {
	t.Parallel()
	store := handSweep(t)
	byTask, err := ComputeStats(context.Background(), store, "s", StatsOptions{By: ByTask})
	if err != nil || len(byTask.Groups) != 3 {
		t.Fatalf("by task: %+v, %v", byTask, err)
	}
	if b := byTask.Groups[1]; b.Group != "b" || !near(b.Accuracy.Mean, 0.5) || b.Accuracy.SE != nil || b.Runs.Runs != 3 {
		t.Errorf("task b: %+v (accuracy %+v)", b, b.Accuracy)
	}
	byEpoch, err := ComputeStats(context.Background(), store, "s", StatsOptions{By: ByEpoch})
	if err != nil || len(byEpoch.Groups) != 2 || byEpoch.Groups[0].Group != "1" || !near(byEpoch.Groups[0].Accuracy.Mean, 2.0/3) {
		t.Fatalf("by epoch: %+v, %v", byEpoch.Groups, err)
	}
	byHash, err := ComputeStats(context.Background(), store, "s", StatsOptions{By: ByHash})
	if err != nil || len(byHash.Groups) != 1 || byHash.Groups[0].Group != "sha256:aaaa" || byHash.Groups[0].Outcomes != 6 {
		t.Fatalf("by hash: %+v, %v", byHash, err)
	}
	if _, err := ComputeStats(context.Background(), store, "s", StatsOptions{By: "snapshot"}); err == nil {
		t.Error("by snapshot: no error")
	}
	if _, err := ComputeStats(context.Background(), store, "nope", StatsOptions{}); err == nil {
		t.Error("an unknown sweep: no error")
	}
}

func TestPassEstimate(t *testing.T) {
	t.Parallel()
	// 1 − C(n−c, k)/C(n, k), by hand: n=5, c=2, k=2: 1 − C(3,2)/C(5,2) = 1 − 3/10.
	for _, tt := range []struct {
		n, c, k int
		want    float64
	}{{5, 2, 2, 0.7}, {5, 0, 3, 0}, {5, 5, 1, 1}, {4, 1, 1, 0.25}, {10, 3, 5, 1 - 21.0/252}} {
		if got := passEstimate(tt.n, tt.c, tt.k); !near(got, tt.want) {
			t.Errorf("pass@%d with %d of %d: %v, want %v", tt.k, tt.c, tt.n, got, tt.want)
		}
	}
}

func TestPassHatEstimate(t *testing.T) {
	t.Parallel()
	// C(c, k)/C(n, k), by hand: n=5, c=3, k=2: C(3,2)/C(5,2) = 3/10;
	// n=4, c=4, k=3: 1; n=3, c=1, k=2: C(1,2) = 0; n=10, c=7, k=3:
	// C(7,3)/C(10,3) = 35/120.
	for _, tt := range []struct {
		n, c, k int
		want    float64
	}{{5, 3, 2, 0.3}, {4, 4, 3, 1}, {3, 1, 2, 0}, {10, 7, 3, 35.0 / 120}, {4, 1, 1, 0.25}} {
		if got := passHatEstimate(tt.n, tt.c, tt.k); !near(got, tt.want) {
			t.Errorf("pass^%d with %d of %d: %v, want %v", tt.k, tt.c, tt.n, got, tt.want)
		}
	}
}

// pass^k beside pass@k, against a hand computation. One agent, 3 epochs:
//
//	t1: 1 1 1    n=3 c=3  pass^1 1    pass^2 1    pass^3 1
//	t2: 1 1 0    n=3 c=2  pass^1 2/3  pass^2 C(2,2)/C(3,2) = 1/3  pass^3 0
//	t3: 0 0 0    n=3 c=0  pass^1 0    pass^2 0    pass^3 0
//	t4: 1 0 -    n=2 c=1  pass^1 1/2  pass^2 C(1,2)/C(2,2) = 0  (n < 3: no pass^3)
//	             (its third epoch ended llm_error three times: unscored)
//
//	pass^1 = (1 + 2/3 + 0 + 1/2)/4 = 13/24
//	pass^2 = (1 + 1/3 + 0 + 0)/4 = 1/3; SE² = Σ(v − 1/3)²/(4−1)/4
//	       = ((2/3)² + 0 + (1/3)² + (1/3)²)/12 = (6/9)/12 = 1/18
//	pass^3 = (1 + 0 + 0)/3 = 1/3 over 3 pairs
//
// and pass@k over the same pairs: pass@1 = pass^1 (one epoch: the same);
// pass@3 = (1 + 1 + 0)/3 = 2/3 (t2: 1 − C(1,3)/C(3,3) = 1).
func TestPassHatK(t *testing.T) {
	t.Parallel()
	done := []polyloop.StopReason{polyloop.StopCompleted}
	var runs []handRun
	for task, scores := range map[string][]float64{"t1": {1, 1, 1}, "t2": {1, 1, 0}, "t3": {0, 0, 0}, "t4": {1, 0}} {
		for i, v := range scores {
			runs = append(runs, handRun{agent: "a", task: task, epoch: i + 1, stops: done, score: score(v)})
		}
	}
	runs = append(runs, handRun{agent: "a", task: "t4", epoch: 3, stops: []polyloop.StopReason{polyloop.StopLLMError, polyloop.StopLLMError, polyloop.StopLLMError}})
	st, err := ComputeStats(context.Background(), handStore(t, "hat", []string{"a"}, 3, runs), "hat", StatsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g := st.Groups[0]
	if g.Scored != 11 || g.Unscored != 1 || len(g.PassHatK) != 3 || len(g.PassAtK) != 3 {
		t.Fatalf("scored %d, unscored %d, pass^k %+v, pass@k %+v", g.Scored, g.Unscored, g.PassHatK, g.PassAtK)
	}
	for i, want := range []struct {
		pairs int
		mean  float64
	}{{4, 13.0 / 24}, {4, 1.0 / 3}, {3, 1.0 / 3}} {
		if p := g.PassHatK[i]; p.K != i+1 || p.Pairs != want.pairs || !near(p.Mean, want.mean) {
			t.Errorf("pass^%d %+v, want %d pairs, mean %v", i+1, p, want.pairs, want.mean)
		}
	}
	if se := g.PassHatK[1].SE; se == nil || !near(*se, math.Sqrt(1.0/18)) {
		t.Errorf("pass^2 SE %v, want √(1/18)", se)
	}
	if p1, p3 := g.PassAtK[0], g.PassAtK[2]; !near(p1.Mean, 13.0/24) || p3.Pairs != 3 || !near(p3.Mean, 2.0/3) {
		t.Errorf("pass@1 %+v, pass@3 %+v", p1, p3)
	}
}

// The statistics of a sweep are the same bytes, call after call: sums run
// in a fixed order (never a map's), at full precision.
func TestStatsDeterministic(t *testing.T) {
	var runs []handRun
	for _, a := range []string{"a", "b"} {
		for task := 0; task < 40; task++ {
			for epoch := 1; epoch <= 3; epoch++ {
				v := float64((task*epoch+len(a))%7) / 7
				if (task+epoch)%3 == 0 {
					v = 1
				}
				runs = append(runs, handRun{agent: a, task: fmt.Sprintf("t%02d", task), epoch: epoch,
					stops: []polyloop.StopReason{polyloop.StopCompleted}, score: score(v), cost: 0.1 + float64(task)/30})
			}
		}
	}
	store := handStore(t, "det", []string{"a", "b"}, 3, runs)
	for _, by := range []string{ByNone, ByAgent, ByEpoch} {
		var first []byte
		for i := 0; i < 20; i++ {
			st, err := ComputeStats(context.Background(), store, "det", StatsOptions{By: by})
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(st)
			if err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = b
			} else if string(b) != string(first) {
				t.Fatalf("by %q: call %d gave other bytes:\n%s\nthe first:\n%s", by, i+1, b, first)
			}
		}
	}
}
