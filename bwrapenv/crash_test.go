//go:build linux

package bwrapenv_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/polyloop/polyloop/internal/envloop"
)

// crashPoints is how many SIGKILLs the campaign lands:
// POLYLOOP_TEST_CRASH_POINTS, else 200 (20 with -short).
func crashPoints(t *testing.T, full int) int {
	if s := os.Getenv("POLYLOOP_TEST_CRASH_POINTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if testing.Short() {
		return 20
	}
	return full
}

// TestCrashCampaign: envloop.Campaign on the sandbox backend — SIGKILL of
// the driving process at ≥ 200 random points, each run resumed until it
// finishes: every line once, every run completed, every log plans — and
// the environments the killed drivers left are found and pruned.
func TestCrashCampaign(t *testing.T) {
	p := envloop.Campaign(t, sandbox(testImages(t)), crashPoints(t, 200), 350*time.Millisecond)
	envloop.CheckPruned(t, p)
}

// TestCrashCampaignPooled: the campaign with a pool and destroys in the
// background (half the points): every line once, every run completed, and
// the pooled sandboxes and unfinished destroys of the killed (and of the
// finished, never closed) drivers pruned.
func TestCrashCampaignPooled(t *testing.T) {
	p := envloop.Campaign(t, pooledSandbox(testImages(t)), crashPoints(t, 200)/2, 350*time.Millisecond)
	envloop.CheckPruned(t, p)
}
