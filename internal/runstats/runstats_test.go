package runstats

import (
	"math"
	"testing"
)

func TestPercentileNearestRank(t *testing.T) {
	t.Parallel()
	values := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tt := range []struct{ p, want float64 }{{0.5, 5}, {0.9, 9}, {1, 10}, {0.01, 1}} {
		if got := percentile(values, tt.p); got != tt.want {
			t.Errorf("percentile(1..10, %v) = %v, want %v", tt.p, got, tt.want)
		}
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("percentile of nothing = %v", got)
	}
}

// TestAccuracyClustered checks the clustered standard error against a
// hand computation. Tasks a (scores 1, 1), b (1, 0), c (0, 0): mean 0.5;
// residual sums a +1, b 0, c −1; SE² = 3/2 · 2 / 36 = 1/12.
func TestAccuracyClustered(t *testing.T) {
	t.Parallel()
	e := Accuracy([]ScoreSample{{"a", 1}, {"a", 1}, {"b", 1}, {"b", 0}, {"c", 0}, {"c", 0}})
	want := math.Sqrt(1.0 / 12)
	if e == nil || e.N != 6 || e.Clusters != 3 || e.Mean != 0.5 || e.SE == nil || math.Abs(*e.SE-want) > 1e-12 {
		t.Fatalf("estimate %+v, want mean 0.5 and SE %v", e, want)
	}
	if math.Abs(*e.Low-(0.5-1.96*want)) > 1e-12 || math.Abs(*e.High-(0.5+1.96*want)) > 1e-12 {
		t.Errorf("interval [%v, %v]", *e.Low, *e.High)
	}
	if one := Accuracy([]ScoreSample{{"a", 1}, {"a", 0}}); one.SE != nil || one.Mean != 0.5 {
		t.Errorf("one cluster: %+v, want a mean and no interval", one)
	}
	if Accuracy(nil) != nil {
		t.Error("no samples: an estimate")
	}
}
