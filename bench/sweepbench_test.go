package bench

import (
	"testing"
	"time"
)

// The latency-bound ideal: runs of equal length go in waves of
// Concurrency, each wave Steps calls of Latency.
func TestSweepIdeal(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		runs, conc int
		want       time.Duration
	}{{1000, 64, 3200 * time.Millisecond}, {64, 64, 200 * time.Millisecond}, {65, 64, 400 * time.Millisecond}, {1, 64, 200 * time.Millisecond}} {
		o := SweepOptions{Runs: tt.runs, Concurrency: tt.conc}.withDefaults()
		if got := o.Ideal(); got != tt.want {
			t.Errorf("%d runs, %d at once: ideal %v, want %v", tt.runs, tt.conc, got, tt.want)
		}
	}
}
