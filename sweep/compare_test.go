package sweep

import (
	"context"
	"math"
	"testing"

	"github.com/polyloop/polyloop"
)

// The paired comparison against a hand computation, with a missing sample
// (B never ran t1 at epoch 2), a retried one (A's t3 e1 failed llm_error
// once) and one retried until no attempt was left (A's t3 e2: unscored).
//
//	task epoch   A                      B      pair   d = A − B
//	t1   1       1                      1      yes    0
//	t1   2       1                      -      no     (A unpaired)
//	t2   1       0                      0      yes    0
//	t2   2       1                      0      yes    1
//	t3   1       llm_error, then 1      0.5    yes    0.5
//	t3   2       llm_error ×3           0.5    no     (B unpaired)
//
//	N = 4 pairs over C = 3 tasks; d̄ = (0 + 0 + 1 + 0.5)/4 = 0.375
//	mean A over the pairs (1 + 0 + 1 + 1)/4 = 0.75; B (1 + 0 + 0 + 0.5)/4 = 0.375
//	residuals d − d̄ summed by task: t1 −0.375; t2 −0.375 + 0.625 = 0.25; t3 0.125
//	Σ_c (Σ r)² = 0.140625 + 0.0625 + 0.015625 = 0.21875
//	SE² = C/(C−1) · 0.21875 / N² = 1.5 · 0.21875 / 16 = 0.0205078125
//	95% interval 0.375 ± 1.96 · √0.0205078125
//	per task: t1 0 (tie), t2 (0 + 1)/2 = 0.5 (A), t3 0.5 (A): A wins 2, B 0, 1 tie
func TestCompareByHand(t *testing.T) {
	t.Parallel()
	done := []polyloop.StopReason{polyloop.StopCompleted}
	retried := []polyloop.StopReason{polyloop.StopLLMError, polyloop.StopCompleted}
	exhausted := []polyloop.StopReason{polyloop.StopLLMError, polyloop.StopLLMError, polyloop.StopLLMError}
	store := handStore(t, "cmp", []string{"A", "B"}, 2, []handRun{
		{agent: "A", task: "t1", epoch: 1, stops: done, score: score(1)},
		{agent: "A", task: "t1", epoch: 2, stops: done, score: score(1)},
		{agent: "A", task: "t2", epoch: 1, stops: done, score: score(0)},
		{agent: "A", task: "t2", epoch: 2, stops: done, score: score(1)},
		{agent: "A", task: "t3", epoch: 1, stops: retried, score: score(1)},
		{agent: "A", task: "t3", epoch: 2, stops: exhausted},
		{agent: "B", task: "t1", epoch: 1, stops: done, score: score(1)},
		{agent: "B", task: "t2", epoch: 1, stops: done, score: score(0)},
		{agent: "B", task: "t2", epoch: 2, stops: done, score: score(0)},
		{agent: "B", task: "t3", epoch: 1, stops: done, score: score(0.5)},
		{agent: "B", task: "t3", epoch: 2, stops: done, score: score(0.5)},
	})
	c, err := Compare(context.Background(), store, "cmp", "A", "B", "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Scorer != "exact" || c.Pairs != 4 || c.UnpairedA != 1 || c.UnpairedB != 1 || !near(c.MeanA, 0.75) || !near(c.MeanB, 0.375) {
		t.Errorf("comparison %+v", c)
	}
	d := c.Difference
	se := math.Sqrt(0.0205078125)
	if d == nil || d.N != 4 || d.Clusters != 3 || !near(d.Mean, 0.375) || d.SE == nil || !near(*d.SE, se) ||
		!near(*d.Low, 0.375-1.96*se) || !near(*d.High, 0.375+1.96*se) {
		t.Fatalf("difference %+v", d)
	}
	if c.WinsA != 2 || c.WinsB != 0 || c.Ties != 1 {
		t.Errorf("wins A %d, B %d, ties %d; want 2, 0, 1", c.WinsA, c.WinsB, c.Ties)
	}
	want := []TaskDifference{{"t1", 1, 1, 1, 0}, {"t2", 2, 0.5, 0, 0.5}, {"t3", 1, 1, 0.5, 0.5}}
	if len(c.Tasks) != len(want) {
		t.Fatalf("tasks %+v", c.Tasks)
	}
	for i, w := range want {
		g := c.Tasks[i]
		if g.Task != w.Task || g.Pairs != w.Pairs || !near(g.MeanA, w.MeanA) || !near(g.MeanB, w.MeanB) || !near(g.Difference, w.Difference) {
			t.Errorf("task %d: %+v, want %+v", i, g, w)
		}
	}
	// B − A is the mirror image.
	r, err := Compare(context.Background(), store, "cmp", "B", "A", "")
	if err != nil || !near(r.Difference.Mean, -0.375) || !near(*r.Difference.SE, se) || r.WinsB != 2 || r.UnpairedA != 1 {
		t.Errorf("B − A: %+v, %v", r, err)
	}
	// pass@k per agent, as stats has it: A's pairs t1 (2 of 2), t2 (1 of
	// 2), t3 (1 of 1): pass@1 = (1 + 1/2 + 1)/3 = 5/6; pass^2 over t1 and
	// t2 = (1 + 0)/2.
	if p := c.PassA.PassAtK; len(p) != 2 || p[0].Pairs != 3 || !near(p[0].Mean, 5.0/6) {
		t.Errorf("A's pass@k %+v", p)
	}
	if p := c.PassA.PassHatK; len(p) != 2 || p[1].Pairs != 2 || !near(p[1].Mean, 0.5) {
		t.Errorf("A's pass^k %+v", p)
	}
	for _, bad := range [][3]string{{"A", "A", ""}, {"A", "C", ""}, {"A", "B", "nope"}} {
		if _, err := Compare(context.Background(), store, "cmp", bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("Compare %v: no error", bad)
		}
	}
}
