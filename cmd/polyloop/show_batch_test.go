package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/polyloop/polyloop/internal/runfixture"
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
