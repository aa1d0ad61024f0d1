package main

import (
	"strings"
	"testing"
)

// unpricedFailing is an agent of a model without a price whose only call
// fails.
const unpricedFailing = `name: unpriced
model:
  provider: script
  script:
    - {fail: "503 from the provider"}
limits: {max_steps: 3}
`

// TestUnpricedCostIsNeverZero: the cost of a run of an unpriced model
// whose only call failed is unknown, never $0 — in run's report and
// progress, ls, stats and show (docs/agent-file.md: "shown as 'cost
// unknown', never as $0").
func TestUnpricedCostIsNeverZero(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	c.write("agent.yaml", unpricedFailing)
	code, stdout, stderr := c.run("run", "agent.yaml", "task", "--id", "u1")
	outputs := map[string]string{"run": stdout + stderr}
	if code != exitStopped {
		t.Fatalf("run: exit %d\n%s", code, outputs["run"])
	}
	for _, args := range [][]string{{"ls"}, {"stats"}, {"show", "u1"}, {"ls", "--json"}, {"stats", "--json"}} {
		_, stdout, stderr := c.run(args...)
		outputs[strings.Join(args, " ")] = stdout + stderr
	}
	for what, out := range outputs {
		if strings.Contains(out, "$0") {
			t.Errorf("%s shows a $0 cost:\n%s", what, out)
		}
		if !strings.Contains(out, "unknown") {
			t.Errorf("%s does not say the cost is unknown:\n%s", what, out)
		}
	}
	if !strings.Contains(outputs["ls --json"], `"cost_unknown": true`) {
		t.Errorf("ls --json:\n%s", outputs["ls --json"])
	}
}
