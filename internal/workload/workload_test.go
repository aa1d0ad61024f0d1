package workload_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/workload"
	"github.com/polyloop/polyloop/memstore"
)

func TestTexts(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       int
	}{
		{"ReplyText", workload.ReplyText, 200},
		{"Note", workload.Note, 50},
		{"ToolResult", workload.ToolResult, 100},
	} {
		if n := utf8.RuneCountInString(tc.text); n != tc.want {
			t.Errorf("%s has %d characters, want %d", tc.name, n, tc.want)
		}
	}
}

// countingExec is an Executor that counts its actions and observes what
// noop would.
type countingExec struct{ n int }

func (c *countingExec) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	c.n++
	return workload.NoopExecutor{}.Execute(ctx, a)
}

func TestExecutorAndCheck(t *testing.T) {
	exec := &countingExec{}
	w := workload.W{Steps: 3, Executor: exec}
	res, err := w.Runner(memstore.New()).Run(context.Background(), "w", w.Agent(), w.Task())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Check(res); err != nil {
		t.Error(err)
	}
	if exec.n != 3 || res.Records != w.RecordsPerRun() {
		t.Errorf("executor ran %d actions, run has %d records; want 3 and %d", exec.n, res.Records, w.RecordsPerRun())
	}
	if err := (workload.W{Steps: 4}).Check(res); err == nil {
		t.Error("Check accepted a run of 3 steps as one of 4")
	}
}

func TestNoopExecutorHonoursCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := workload.NoopExecutor{}.Execute(ctx, polyloop.Action{Tool: "noop"})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Execute with a cancelled context: %v, want context.Canceled", err)
	}
}

// The package must stay importable by the stores' own tests: it imports no
// store (package bench does).
func TestImportsNoStore(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasSuffix(dep, "store") && strings.HasPrefix(dep, "github.com/polyloop/polyloop/") {
			t.Errorf("package workload depends on %s", dep)
		}
	}
}
