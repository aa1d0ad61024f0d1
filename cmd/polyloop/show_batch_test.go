package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polyloop/polyloop/internal/runfixture"
	"github.com/polyloop/polyloop/sqlitestore"
)

// TestShowPrintsEveryActionOfABatch: show prints each action of a batch
// with its own outcome — those settled by action_result records too — and
// the executor's audit text of a synthetic observation.
func TestShowPrintsEveryActionOfABatch(t *testing.T) {
	t.Parallel()
	spec := populatedStore(t)
	var stdout, stderr bytes.Buffer
	if code := execute([]string{"--store", spec, "show", runfixture.BatchRun}, strings.NewReader(""), &stdout, &stderr); code != exitOK {
		t.Fatalf("show: exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"action a1.1 (attempt 1, replay_safe): echo",
		"→ executed (a1.1)\n      observation: hello",
		"→ not_executed [synthetic] (a1.2)",
		`executor said: unknown tool "nosuch"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "UNKNOWN") {
		t.Errorf("show marks a settled action of unknown outcome:\n%s", out)
	}
}

// TestShowActionsSettledAtTheirGate: a denied action and a delivered one,
// which have no intent, are shown with their outcomes and said to be
// settled at their gate, not as attempt 0 of no replay policy.
func TestShowActionsSettledAtTheirGate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "runs.db")
	st, err := sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	runfixture.Gated(t, st, runfixture.NewClock(runfixture.Base))
	st.Close()
	var stdout, stderr bytes.Buffer
	if code := execute([]string{"--store", "sqlite:" + path, "show", runfixture.GatedRun}, strings.NewReader(""), &stdout, &stderr); code != exitOK {
		t.Fatalf("show: exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{`action a1.2 (settled at its gate, never run here): book {"room":"7"}`, "room 7 booked",
		`action a1.3 (settled at its gate, never run here): send {"to":"bob"}`} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "attempt 0") {
		t.Errorf("show names an attempt 0:\n%s", out)
	}
}
