package bench

import (
	"context"
	"os"
	"strings"
	"testing"
)

// These tests start this test binary as a child: TestMain calls
// MaybeRunChild first, as polyloop's main does.

func TestChildFailureCarriesItsMessage(t *testing.T) {
	_, err := startChild(context.Background(), childTask{Mode: "no-such-mode"})
	if err == nil || !strings.Contains(err.Error(), `unknown mode "no-such-mode"`) {
		t.Fatalf("child with an unknown mode: %v", err)
	}
	loc := storeSpec{kind: kindSQLite}.newLoc(t.TempDir(), 0)
	_, err = startChild(context.Background(), childTask{Mode: modePlan, Store: loc, RunID: "absent"})
	if err == nil || !strings.Contains(err.Error(), "run not found") {
		t.Fatalf("plan child on a missing run: %v", err)
	}
}

func TestParseChildResult(t *testing.T) {
	res, err := parseChildResult([]byte("some noise\n{\"steps\":7,\"peak_rss_kb\":9}\n\n"), "x")
	if err != nil || res.Steps != 7 || res.PeakRSSKB != 9 {
		t.Errorf("got %+v, %v", res, err)
	}
	if _, err := parseChildResult([]byte("Usage: polyloop [command]\n"), "x"); err == nil ||
		!strings.Contains(err.Error(), "MaybeRunChild") {
		t.Errorf("output of a binary that is not a child: %v", err)
	}
}

func TestMaybeRunChildReturnsWithoutItsVariable(t *testing.T) {
	t.Setenv(ChildEnv, "") // restores the environment after the test
	if err := os.Unsetenv(ChildEnv); err != nil {
		t.Fatal(err)
	}
	MaybeRunChild() // must return: exiting here would abort the test binary
}
