package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/funcexec"
	"github.com/polyloop/polyloop/internal/runfixture"
	"github.com/polyloop/polyloop/scriptmodel"
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

// TestShowPrintsABatchInTheReplysOrder: the actions of a parallel batch
// settle in the order they finish — here the second before the first —
// and show prints each with its outcome in the reply's order.
func TestShowPrintsABatchInTheReplysOrder(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "polyloop.db")
	st, err := sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	second := make(chan struct{})
	exec := funcexec.New()
	funcexec.MustRegister(exec, "first", "Answers once second has.", polyloop.ReplaySafe, func(ctx context.Context, _ struct{}) (string, error) {
		<-second
		time.Sleep(200 * time.Millisecond) // second's settlement is recorded meanwhile
		return "one", nil
	})
	funcexec.MustRegister(exec, "second", "Answers at once.", polyloop.ReplaySafe, func(ctx context.Context, _ struct{}) (string, error) {
		defer close(second)
		return "two", nil
	})
	r := &polyloop.Runner{Parser: runfixture.Parser{}, Executor: exec, Store: st,
		Model: scriptmodel.New(runfixture.Batch(scriptmodel.Call("c1", "first", struct{}{}), scriptmodel.Call("c2", "second", struct{}{})), scriptmodel.Reply("done"))}
	agent := polyloop.Agent{Name: "parallel", ParallelActions: true, Limits: polyloop.Limits{MaxSteps: 3}}
	if res, err := r.Run(context.Background(), "p1", agent, polyloop.Task{Input: "both"}); err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("%+v, %v", res, err)
	}
	log, _ := polyloop.ReadLog(context.Background(), st, "p1")
	var settled []string // the test's premise: a1.2 settles first
	for _, r := range log.Records {
		if res, ok := r.Body.(*polyloop.ActionResult); ok {
			settled = append(settled, res.ResultID)
		}
	}
	if len(settled) != 1 || settled[0] != "a1.2" {
		t.Fatalf("action_result records settle %v, want a1.2 alone (a1.1 by the step record)", settled)
	}
	st.Close()
	var stdout, stderr bytes.Buffer
	if code := execute([]string{"--store", "sqlite:" + path, "show", "p1"}, strings.NewReader(""), &stdout, &stderr); code != exitOK {
		t.Fatalf("show: exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	order := []string{"action a1.1 ", "→ executed (a1.1)", "observation: one", "action a1.2 ", "→ executed (a1.2)", "observation: two"}
	at := 0
	for _, want := range order {
		i := strings.Index(out[at:], want)
		if i < 0 {
			t.Fatalf("show lacks %q after what came before, in this order %q:\n%s", want, order, out)
		}
		at += i + len(want)
	}
}
