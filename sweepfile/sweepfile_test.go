package sweepfile_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/agentfile"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/sweepfile"
)

func write(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// agentFile writes an agent whose scripted model answers answer.
func agentFile(t *testing.T, dir, name, answer string) {
	t.Helper()
	write(t, dir, name+".yaml", fmt.Sprintf("name: %s\nmodel:\n  provider: script\n  script:\n    - text: %q\nlimits:\n  max_steps: 3\n", name, answer))
}

// A sweep file names its agents, tasks and scorers; Load builds a sweep
// that runs.
func TestLoadAndRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	agentFile(t, dir, "right", "4")
	agentFile(t, dir, "wrong", "5")
	write(t, dir, "tasks.jsonl", `{"id": "q1", "input": "2+2?", "target": "4"}`+"\n"+`{"id": "q2", "input": "1+3?", "target": ["4", "four"]}`+"\n")
	path := write(t, dir, "sweep.yaml", `name: arith
agents: [right.yaml, wrong.yaml]
tasks: tasks.jsonl
epochs: 2
concurrency: 2
retry: {attempts: 2, backoff_ms: 1}
providers:
  script: {max_connections: 1}
scorers:
  - kind: exact
  - {name: num, kind: numeric, tolerance: 0.5}
`)
	l, err := sweepfile.Load(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	m := l.Sweep.Manifest()
	if m.Name != "arith" || len(m.Agents) != 2 || m.Epochs != 2 || len(m.Scorers) != 2 || m.Scorers[1].Name != "num" || m.Retry.Attempts != 2 {
		t.Fatalf("manifest %+v", m)
	}
	store := memstore.New()
	res, err := l.Sweep.Run(context.Background(), sweep.RunOptions{Store: store})
	if err != nil || res.Progress.Done != 8 || res.Progress.StopReasons[polyloop.StopCompleted] != 8 {
		t.Fatalf("%+v, %v", res, err)
	}
	st, err := sweep.ComputeStats(context.Background(), store, "arith", sweep.StatsOptions{By: sweep.ByAgent})
	if err != nil || len(st.Groups) != 2 {
		t.Fatal(st, err)
	}
	if r, w := st.Groups[0], st.Groups[1]; r.Group != "right" || r.Accuracy.Mean != 1 || w.Accuracy.Mean != 0 {
		t.Errorf("accuracy right %+v, wrong %+v", r.Accuracy, w.Accuracy)
	}
	num, err := sweep.ComputeStats(context.Background(), store, "arith", sweep.StatsOptions{By: sweep.ByAgent, Scorer: "num"})
	if err != nil || num.Groups[1].Accuracy.Mean != 0 {
		t.Errorf("numeric within 0.5 of 4 for 5: %+v, %v", num.Groups[1].Accuracy, err)
	}
	re, err := sweepfile.Reload(context.Background(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	re.Close()
	agentFile(t, dir, "wrong", "6")
	if _, err := sweepfile.Reload(context.Background(), m, nil); err == nil || !strings.Contains(err.Error(), "the agent wrong of sweep arith changed") {
		t.Errorf("reloading after an agent changed: %v", err)
	}
}

// A sweep file is strict: every problem at once, at file:line:col.
func TestCheckProblems(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := write(t, dir, "sweep.yaml", `name: my.sweep
agents: []
tasks: tasks.txt
epochs: -1
retry:
  on: [llm_error, completed, oops]
scorers:
  - kind: exact
    pattern: x
  - kind: regex
  - kind: regex
    name: regex
    pattern: "("
  - kind: judge
concurency: 3
`)
	_, err := sweepfile.Check(path)
	var list agentfile.ErrorList
	if !errors.As(err, &list) || !errors.Is(err, agentfile.ErrInvalid) {
		t.Fatalf("Check: %v, want an ErrorList", err)
	}
	want := []string{
		path + ":1:7: name: 1 to 64 letters, digits, '_' or '-', starting with a letter or digit (the sweep's run ids start with it)",
		path + ":2:9: agents: required: at least one agent file",
		path + `:3:8: tasks: a task file is .jsonl, .ndjson or .csv, not ".txt"`,
		path + ":4:9: epochs: must not be negative",
		path + ":6:19: retry.on[1]: a completed run is never retried",
		path + `:6:30: retry.on[2]: "oops" is not a stop reason (max_steps, token_budget, cost_budget, time_limit, working_limit, llm_error, env_error, resume_state_unknown)`,
		path + ":9:14: scorers[0].pattern: pattern is not an option of an exact scorer (its options: ignore_case)",
		path + ":10:5: scorers[1].pattern: a regex scorer needs pattern",
		path + ":11:5: scorers[2]: the scorer name \"regex\" is taken by scorers[1]: give each scorer its own name",
		path + ":13:14: scorers[2].pattern: not a regular expression (RE2 syntax): error parsing regexp: missing closing ): `(`",
		path + ":14:11: scorers[3].kind: kind \"judge\": expected one of exact, includes, regex, numeric, command, model",
		path + `:15:1: concurency: unknown field "concurency" (did you mean concurrency?): the keys of the top level are name, agents, tasks, epochs, concurrency, max_scorers, max_environments, retry, time_limit, working_limit, providers, rate_limit, scorers (docs/sweeps.md)`,
	}
	if got := strings.Split(err.Error(), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", err, strings.Join(want, "\n"))
	}
	if _, err := sweepfile.Check(write(t, dir, "empty.yaml", "# nothing\n")); err == nil || !strings.Contains(err.Error(), "the sweep file is empty") {
		t.Errorf("an empty file: %v", err)
	}
}
