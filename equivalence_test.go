package polyloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/polylooptest"
	"github.com/polyloop/polyloop/scriptmodel"
)

// referenceScript is a 12-step run with an invalid decision, a not_executed
// action, a truncated observation, a batch of two actions and a final
// answer; every tool it uses is replay-safe.
func referenceScript() *scriptmodel.Client {
	two := scriptmodel.Turn{ToolCalls: []polyloop.ToolCall{
		{ID: "c6a", Name: "echo", Args: json.RawMessage(`{"text":"x"}`)},
		{ID: "c6b", Name: "echo", Args: json.RawMessage(`{"text":"y"}`)},
	}}
	return scriptmodel.NewWithOptions(scriptmodel.Options{CostPerToken: 1e-6},
		call(1, "echo", map[string]string{"text": "one"}),
		scriptmodel.Reply("INVALID: no action here"),
		call(3, "refuse", nil),
		call(4, "echo", map[string]string{"text": strings.Repeat("long observation ", 20)}),
		call(5, "echo", map[string]string{"text": "five"}),
		two,
		call(7, "echo", map[string]string{"text": "seven"}),
		call(8, "echo", map[string]string{"text": "eight"}),
		call(9, "refuse", nil),
		call(10, "echo", map[string]string{"text": "ten"}),
		call(11, "echo", map[string]string{"text": "eleven"}),
		scriptmodel.Reply("the answer"),
	)
}

func equivalenceAgent() polyloop.Agent {
	a := testAgent()
	a.Limits.ObservationLimit = 100
	return a
}

func sameLog(t *testing.T, label string, got, want polyloop.RunLog) {
	t.Helper()
	if err := polylooptest.CheckEquivalent(got, want); err != nil {
		t.Fatalf("%s: %v\ngot kinds:  %v\nwant kinds: %v", label, err, kinds(got), kinds(want))
	}
}

func referenceLog(t *testing.T) polyloop.RunLog {
	t.Helper()
	store := memstore.New()
	res, err := newRunner(referenceScript(), store, newTestExec()).Run(context.Background(), "ref", equivalenceAgent(), polyloop.Task{Input: "reference task"})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != polyloop.StopCompleted || res.Totals.Steps != 12 {
		t.Fatalf("reference run: %+v", res)
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "ref")
	var truncated, synthetic, invalid int
	if n := len(log.ActionResults()); n != 1 {
		t.Fatalf("reference run has %d action results, want 1 (the first action of step 6's batch)", n)
	}
	for _, s := range log.Steps() {
		if s.TruncatedChars > 0 {
			truncated++
		}
		if s.Synthetic {
			synthetic++
		}
		if s.Decision == polyloop.DecisionInvalid {
			invalid++
		}
	}
	if truncated != 1 || synthetic != 2 || invalid != 1 {
		t.Fatalf("reference run lacks its features: truncated %d, synthetic %d, invalid %d", truncated, synthetic, invalid)
	}
	return log
}

// SPEC §7.2 equivalence property: a run stopped after any prefix of its
// records and resumed — crashing again during the resume — ends with the same
// records as the uninterrupted run, apart from timestamps and orphaned
// intents.
func TestEquivalenceAfterCrash(t *testing.T) {
	ref := referenceLog(t)
	ctx := context.Background()
	crashedAgain := 0
	for k := 1; k < len(ref.Records); k++ {
		for _, again := range []int{0, 1, 2, 3} {
			store := memstore.NewWithOptions(memstore.Options{CrashAfter: k})
			r := newRunner(referenceScript(), store, newTestExec())
			_, err := r.Run(ctx, "ref", equivalenceAgent(), polyloop.Task{Input: "reference task"})
			if !errors.Is(err, memstore.ErrCrashed) {
				t.Fatalf("k=%d: Run err = %v, want the simulated crash", k, err)
			}
			// Crash again during the resume, `again` records later.
			resumes := 0
			for {
				if again > 0 && resumes == 0 {
					store.SetFaults(memstore.Options{CrashAfter: store.Len() + again})
				} else {
					store.SetFaults(memstore.Options{})
				}
				resumes++
				res, err := continueRun(newRunner(referenceScript(), store, newTestExec()), store, "ref", equivalenceAgent(), "reference task")
				if errors.Is(err, memstore.ErrCrashed) && resumes < 5 {
					crashedAgain++
					continue
				}
				if err != nil {
					t.Fatalf("k=%d again=%d: Resume: %v", k, again, err)
				}
				if res.StopReason != polyloop.StopCompleted || res.Totals.Steps != 12 {
					t.Fatalf("k=%d: resumed result %+v", k, res)
				}
				break
			}
			got, _ := polyloop.ReadLog(ctx, store, "ref")
			sameLog(t, fmt.Sprintf("crash after %d records, again after %d", k, again), got, ref)
		}
	}
	if crashedAgain < len(ref.Records) {
		t.Fatalf("only %d resumes crashed again; the second crash is not exercised", crashedAgain)
	}
}

// The same property from every prefix of the reference log, including
// prefixes no batching of ours produces (a model result without its action
// intent, an action intent alone): the planner handles every valid log.
func TestEquivalenceFromEveryPrefix(t *testing.T) {
	ref := referenceLog(t)
	ctx := context.Background()
	for k := 1; k < len(ref.Records); k++ {
		store := memstore.New()
		store.Put("ref", ref.Records[:k])
		for i := 0; i < 2; i++ { // resuming twice is the same as once
			res, err := newRunner(referenceScript(), store, newTestExec()).Resume(ctx, "ref", equivalenceAgent())
			if err != nil {
				t.Fatalf("prefix %d: %v", k, err)
			}
			if res.StopReason != polyloop.StopCompleted {
				t.Fatalf("prefix %d: %+v", k, res)
			}
		}
		got, _ := polyloop.ReadLog(ctx, store, "ref")
		sameLog(t, fmt.Sprintf("prefix %d", k), got, ref)
		if fin := got.Finished(); fin.Totals != polyloop.ComputeTotals(got) {
			t.Fatalf("prefix %d: RunFinished totals %+v differ from the log's %+v", k, fin.Totals, polyloop.ComputeTotals(got))
		}
	}
}

// SPEC §7.2: with never-replay tools, no never-replay action is ever executed
// twice, whatever the crash point; an action of unknown outcome finishes the
// run with resume_state_unknown.
func TestNeverReplayLedger(t *testing.T) {
	script := func() *scriptmodel.Client {
		return scriptmodel.New(
			call(1, "send", map[string]string{"to": "alice"}),
			call(2, "echo", map[string]string{"text": "between"}),
			call(3, "send", map[string]string{"to": "bob"}),
			call(4, "send", map[string]string{"to": "carol"}),
			scriptmodel.Reply("sent"),
		)
	}
	ctx := context.Background()
	full := memstore.New()
	if _, err := newRunner(script(), full, newTestExec()).Run(ctx, "r", testAgent(), polyloop.Task{Input: "t"}); err != nil {
		t.Fatal(err)
	}
	total := full.Len()
	unknown := 0
	for k := 1; k < total; k++ {
		store := memstore.NewWithOptions(memstore.Options{CrashAfter: k})
		exec := newTestExec() // one environment across the crash: its ledger is the truth
		_, err := newRunner(script(), store, exec).Run(ctx, "r", testAgent(), polyloop.Task{Input: "t"})
		if !errors.Is(err, memstore.ErrCrashed) {
			t.Fatalf("k=%d: %v", k, err)
		}
		store.SetFaults(memstore.Options{})
		res, err := continueRun(newRunner(script(), store, exec), store, "r", testAgent(), "t")
		if err != nil {
			t.Fatalf("k=%d: %v", k, err)
		}
		for _, to := range []string{"alice", "bob", "carol"} {
			if n := exec.count(`send:{"to":"` + to + `"}`); n > 1 {
				t.Fatalf("k=%d: never-replay send to %s executed %d times", k, to, n)
			}
		}
		if res.StopReason == polyloop.StopResumeStateUnknown {
			unknown++
			if res.Totals.UnknownActions != 1 {
				t.Fatalf("k=%d: totals %+v, want one action of unknown outcome", k, res.Totals)
			}
		} else if res.StopReason != polyloop.StopCompleted {
			t.Fatalf("k=%d: stop %s", k, res.StopReason)
		}
	}
	if unknown == 0 {
		t.Fatal("no crash point fell between a send and its step record; the test proves nothing")
	}
}

// continueRun resumes a run, or starts it again when the crash came before
// its first write landed (Resume then rightly says the run does not exist).
func continueRun(r *polyloop.Runner, store *memstore.Store, id string, agent polyloop.Agent, task string) (polyloop.RunResult, error) {
	ctx := context.Background()
	res, err := r.Resume(ctx, id, agent)
	if errors.Is(err, polyloop.ErrRunNotFound) && store.Len() == 0 {
		return r.Run(ctx, id, agent, polyloop.Task{Input: task})
	}
	return res, err
}
