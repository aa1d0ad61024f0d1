package polyloop_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/runstats"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/polylooptest"
)

// Fork at every step of the reference run with the agent unchanged, then run
// to the end: the fork's records after run_started are the reference's (the
// copies byte for byte, the rest equivalent); nothing of the prefix runs
// again; the fork's totals count only its own calls and actions, so that the
// source's and the fork's together count each billed call once.
func TestForkAtEveryStep(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	if _, err := newRunner(referenceScript(), store, newTestExec()).Run(ctx, "ref", equivalenceAgent(), polyloop.Task{Input: "reference task"}); err != nil {
		t.Fatal(err)
	}
	ref, _ := polyloop.ReadLog(ctx, store, "ref")
	refTotals := ref.Finished().Totals
	for n := 0; n <= refTotals.Steps; n++ {
		id := fmt.Sprintf("fork-%d", n)
		model, exec := referenceScript(), newTestExec()
		res, err := newRunner(model, store, exec).Fork(ctx, "ref", n, id, equivalenceAgent())
		if err != nil {
			t.Fatalf("fork at %d: %v", n, err)
		}
		fork, _ := polyloop.ReadLog(ctx, store, id)
		src := fork.Started().ForkedFrom
		if src == nil || src.RunID != "ref" || src.AtStep != n || len(src.Fields) != 0 || src.SnapshotHash != ref.Started().SnapshotHash {
			t.Fatalf("fork at %d: forked_from %+v", n, src)
		}
		for i := 1; i <= src.Copied; i++ {
			a, _ := fork.Records[i].MarshalJSON()
			b, _ := ref.Records[i].MarshalJSON()
			if string(a) != string(b) {
				t.Fatalf("fork at %d: copy %d differs:\n%s\n%s", n, i, a, b)
			}
		}
		// The rest is the reference's, as the equivalence property says.
		if err := polylooptest.CheckEquivalent(polyloop.RunLog{Records: fork.Records[1 : len(fork.Records)-1]},
			polyloop.RunLog{Records: ref.Records[1 : len(ref.Records)-1]}); err != nil {
			t.Fatalf("fork at %d: %v", n, err)
		}
		if h := polyloop.History(fork); !reflect.DeepEqual(h, polyloop.History(ref)) {
			t.Fatalf("fork at %d: the history differs from the reference's:\n%s", n, historyDiff(h, polyloop.History(ref)))
		}
		tot := res.Totals
		copied := polyloop.ComputeTotals(polyloop.RunLog{Records: ref.Records[:src.Copied+1]})
		if tot.CopiedSteps != n || tot.Steps+tot.CopiedSteps != refTotals.Steps ||
			tot.ModelCalls+copied.ModelCalls != refTotals.ModelCalls || tot.Actions+copied.Actions != refTotals.Actions ||
			tot.Tokens()+copied.Tokens() != refTotals.Tokens() {
			t.Fatalf("fork at %d: totals %+v + copied %+v ≠ the reference's %+v", n, tot, copied, refTotals)
		}
		if model.Calls() != refTotals.ModelCalls-copied.ModelCalls {
			t.Fatalf("fork at %d: %d model calls, want only the %d after the fork", n, model.Calls(), refTotals.ModelCalls-copied.ModelCalls)
		}
		for key, k := range exec.snapshot() {
			if k > 2 { // refuse:null is asked twice in the reference
				t.Fatalf("fork at %d: %s ran %d times", n, key, k)
			}
		}
	}
}

// A fork with a changed system prompt records the difference, and the model
// sees the new prompt from the fork on (the copied steps are not re-run).
func TestForkWithChangedPrompt(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	if _, err := newRunner(referenceScript(), store, newTestExec()).Run(ctx, "ref", equivalenceAgent(), polyloop.Task{Input: "reference task"}); err != nil {
		t.Fatal(err)
	}
	changed := equivalenceAgent()
	changed.System = "You are a careful agent."
	rec := &requestRecorder{inner: referenceScript()}
	rec.describe = true
	if _, err := newRunner(rec, store, newTestExec()).Fork(ctx, "ref", 7, "f", changed); err != nil {
		t.Fatal(err)
	}
	fork, _ := polyloop.ReadLog(ctx, store, "f")
	if f := fork.Started().ForkedFrom; !slices.Equal(f.Fields, []string{"system"}) {
		t.Fatalf("forked_from fields %v, want [system]", f.Fields)
	}
	if len(rec.reqs) == 0 || rec.reqs[0].Step != 8 {
		t.Fatalf("the first call after the fork is %+v, want step 8", rec.reqs)
	}
	for _, req := range rec.reqs {
		if req.Messages[0].Content != changed.System {
			t.Fatalf("step %d was shown system prompt %q", req.Step, req.Messages[0].Content)
		}
	}
}

// Forking at a step the source has not completed is refused: its actions
// may be of unknown outcome.
func TestForkRefusesAnOpenStep(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	store.Put("src", polyloop.ParseLogScript(t, "src", []string{"start", "intent 1.1", "result 1.1 tool=send", "action 1.1 tool=send replay=never"}).Records)
	_, err := newRunner(referenceScript(), store, newTestExec()).Fork(ctx, "src", 1, "f", testAgent())
	if !errors.Is(err, polyloop.ErrForkPoint) || !strings.Contains(err.Error(), "step 1") {
		t.Fatalf("err = %v, want ErrForkPoint naming the step", err)
	}
	if _, err := newRunner(referenceScript(), store, newTestExec()).Fork(ctx, "nope", 1, "g", testAgent()); !errors.Is(err, polyloop.ErrRunNotFound) {
		t.Fatalf("err = %v, want ErrRunNotFound", err)
	}
}

// A fork resumes like any run: crashed mid-way, it goes on from its own log
// (the copies are not copied again).
func TestForkResumes(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	if _, err := newRunner(referenceScript(), store, newTestExec()).Run(ctx, "ref", equivalenceAgent(), polyloop.Task{Input: "reference task"}); err != nil {
		t.Fatal(err)
	}
	ref, _ := polyloop.ReadLog(ctx, store, "ref")
	crashing := memstore.New()
	crashing.Put("ref", ref.Records)
	crashing.SetFaults(memstore.Options{CrashAfter: crashing.Len() + 25}) // past the fork's first write, before its end
	if _, err := newRunner(referenceScript(), crashing, newTestExec()).Fork(ctx, "ref", 4, "f", equivalenceAgent()); !errors.Is(err, memstore.ErrCrashed) {
		t.Fatalf("err = %v, want the crash", err)
	}
	crashing.SetFaults(memstore.Options{})
	res, err := newRunner(referenceScript(), crashing, newTestExec()).Resume(ctx, "f", equivalenceAgent())
	if err != nil || res.StopReason != polyloop.StopCompleted || res.Totals.CopiedSteps != 4 {
		t.Fatalf("resume of the fork: %+v, %v", res, err)
	}
}

// A fork of a run that a budget stopped, with the agent unchanged, stops
// where its source stopped: the budgets bound the trajectory, the copied
// prefix included, though the fork's totals count only its own calls.
func TestForkKeepsTheBudgets(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	if _, err := newRunner(referenceScript(), store, newTestExec()).Run(ctx, "unbounded", equivalenceAgent(), polyloop.Task{Input: "reference task"}); err != nil {
		t.Fatal(err)
	}
	log, _ := polyloop.ReadLog(ctx, store, "unbounded")
	// The budget is what the first four steps spend: the run stops before
	// its fifth.
	var tokens int64
	var cost float64
	for _, r := range log.Records {
		if res, ok := r.Body.(*polyloop.ModelCallResult); ok && res.Reply != nil && res.Step <= 4 {
			tokens += res.Reply.Usage.InputTokens + res.Reply.Usage.OutputTokens
			cost += *res.Reply.Usage.CostUSD
		}
	}
	for _, tc := range []struct {
		name   string
		limits polyloop.Limits
		reason polyloop.StopReason
	}{
		{"tokens", polyloop.Limits{MaxTokens: tokens}, polyloop.StopTokenBudget},
		{"cost", polyloop.Limits{MaxCostUSD: cost * 0.999999}, polyloop.StopCostBudget},
	} {
		agent := equivalenceAgent()
		agent.Limits.MaxTokens, agent.Limits.MaxCostUSD = tc.limits.MaxTokens, tc.limits.MaxCostUSD
		src := "src-" + tc.name
		res, err := newRunner(referenceScript(), store, newTestExec()).Run(ctx, src, agent, polyloop.Task{Input: "reference task"})
		if err != nil || res.StopReason != tc.reason || res.Totals.Steps != 4 {
			t.Fatalf("%s: the source run: %+v, %v", tc.name, res, err)
		}
		for n := 0; n <= 4; n++ {
			res, err := newRunner(referenceScript(), store, newTestExec()).Fork(ctx, src, n, fmt.Sprintf("%s-fork-%d", src, n), agent)
			if err != nil {
				t.Fatalf("%s: fork at %d: %v", tc.name, n, err)
			}
			if res.StopReason != tc.reason || res.Totals.CopiedSteps+res.Totals.Steps != 4 {
				t.Errorf("%s: fork at %d: stopped %s after %d copied and %d own steps, want %s after 4 in all",
					tc.name, n, res.StopReason, res.Totals.CopiedSteps, res.Totals.Steps, tc.reason)
			}
		}
	}
}

// The statistics over a source and its forks count each billed call once:
// what they spent is the sum of the usage of every model call made, the
// copies of a fork made by no one.
func TestForkStatsCountEachCallOnce(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	if _, err := newRunner(referenceScript(), store, newTestExec()).Run(ctx, "ref", equivalenceAgent(), polyloop.Task{Input: "reference task"}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 3, 7, 12} {
		if _, err := newRunner(referenceScript(), store, newTestExec()).Fork(ctx, "ref", n, fmt.Sprintf("fork-%d", n), equivalenceAgent()); err != nil {
			t.Fatal(err)
		}
	}
	// The calls made: the source's, and each fork's after its copies.
	var tokens int64
	var calls int
	runs, err := runstats.List(ctx, store, polyloop.RunFilter{})
	if err != nil || len(runs) != 5 {
		t.Fatalf("%d runs, %v", len(runs), err)
	}
	for _, r := range runs {
		log, _ := polyloop.ReadLog(ctx, store, r.RunID)
		copied := 0
		if f := log.Started().ForkedFrom; f != nil {
			copied = f.Copied
		}
		for _, rec := range log.Records[copied+1:] {
			if res, ok := rec.Body.(*polyloop.ModelCallResult); ok && res.Reply != nil {
				tokens += res.Reply.Usage.Tokens()
				calls++
			}
		}
	}
	g := runstats.Compute(runs, runstats.KeyBy("", nil))[0]
	if g.Spend.Tokens != tokens || g.Spend.TokensUnknown {
		t.Fatalf("stats spend %d tokens (unknown %v), want the %d of the %d calls made", g.Spend.Tokens, g.Spend.TokensUnknown, tokens, calls)
	}
}

// A fork's copied steps are read under what they ran under, recorded in
// the fork's own log: the history of its copies shows the source's system
// prompt, the fork's own steps the fork's. A fork of that fork names the
// configuration in force at the step it forks from, and differs from it in
// what it changes.
func TestForkCopiesKeepTheirConfiguration(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	if _, err := newRunner(referenceScript(), store, newTestExec()).Run(ctx, "ref", equivalenceAgent(), polyloop.Task{Input: "reference task"}); err != nil {
		t.Fatal(err)
	}
	ref, _ := polyloop.ReadLog(ctx, store, "ref")
	orig, origHash := ref.Snapshot()
	changed := equivalenceAgent()
	changed.System = "You are a careful agent."
	if _, err := newRunner(referenceScript(), store, newTestExec()).Fork(ctx, "ref", 7, "f", changed); err != nil {
		t.Fatal(err)
	}
	fork, _ := polyloop.ReadLog(ctx, store, "f")
	_, forkHash := fork.Snapshot()
	// upTo is the log up to step n's model result: the history it gives
	// is what step n's call was shown.
	upTo := func(log polyloop.RunLog, n int) polyloop.RunLog {
		for i, r := range log.Records {
			if res, ok := r.Body.(*polyloop.ModelCallResult); ok && res.Step == n {
				return polyloop.RunLog{RunID: log.RunID, Records: log.Records[:i]}
			}
		}
		t.Fatalf("%s has no step %d", log.RunID, n)
		return polyloop.RunLog{}
	}
	system := func(log polyloop.RunLog) string { return polyloop.History(log)[0].Content }
	for _, n := range []int{1, 4, 7} {
		if got := system(upTo(fork, n)); got != orig.System {
			t.Errorf("the fork's history shows its copied step %d the system prompt %q, want the source's %q", n, got, orig.System)
		}
		if _, h := upTo(fork, n).Snapshot(); h != origHash {
			t.Errorf("the snapshot in force at the fork's copied step %d is %s, want the source's %s", n, h, origHash)
		}
	}
	if got := system(upTo(fork, 8)); got != changed.System {
		t.Errorf("the fork's history shows its own step 8 %q, want %q", got, changed.System)
	}
	for _, tc := range []struct {
		at     int
		agent  polyloop.Agent
		hash   string
		fields []string
	}{
		{3, equivalenceAgent(), origHash, nil}, // inside f's copies: the source's configuration
		{3, changed, origHash, []string{"system"}},
		{9, changed, forkHash, nil}, // f's own step
		{9, equivalenceAgent(), forkHash, []string{"system"}},
	} {
		id := fmt.Sprintf("ff-%d-%t", tc.at, tc.agent.System == changed.System)
		if _, err := newRunner(referenceScript(), store, newTestExec()).Fork(ctx, "f", tc.at, id, tc.agent); err != nil {
			t.Fatal(err)
		}
		ff, _ := polyloop.ReadLog(ctx, store, id)
		if src := ff.Started().ForkedFrom; src.SnapshotHash != tc.hash || !slices.Equal(src.Fields, tc.fields) {
			t.Errorf("%s: forked_from names %s with fields %v, want %s with %v", id, src.SnapshotHash, src.Fields, tc.hash, tc.fields)
		}
		// Each copied step is read as it ran.
		for n := 1; n <= tc.at; n++ {
			want := orig.System
			if n > 7 {
				want = changed.System
			}
			if got := system(upTo(ff, n)); got != want {
				t.Errorf("%s: the history shows copied step %d %q, want %q", id, n, got, want)
			}
		}
		if got := system(ff); got != tc.agent.System {
			t.Errorf("%s: the history after its own steps shows %q, want %q", id, got, tc.agent.System)
		}
	}
}

// A fork's copies are no new facts: its sinks get one step_copied event per
// copied step and none of the copies' model calls or actions, so a consumer
// summing the usage of model_call_finished counts what the fork spent, as
// its totals do, and nothing of its source's twice.
func TestForkEventsDoNotRepeatTheCopies(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	if _, err := newRunner(referenceScript(), store, newTestExec()).Run(ctx, "ref", equivalenceAgent(), polyloop.Task{Input: "reference task"}); err != nil {
		t.Fatal(err)
	}
	sink := &collectSink{}
	r := newRunner(referenceScript(), store, newTestExec())
	r.Sinks = []polyloop.EventSink{sink}
	res, err := r.Fork(ctx, "ref", 4, "f", equivalenceAgent())
	if err != nil {
		t.Fatal(err)
	}
	var tokens int64
	var copied []int
	for _, ev := range sink.events {
		switch {
		case ev.Kind == polyloop.EventStepCopied:
			if ev.StepRecord == nil || ev.StepRecord.Step != ev.Step {
				t.Errorf("step_copied %+v without its step record", ev)
			}
			copied = append(copied, ev.Step)
		case ev.Step > 0 && ev.Step <= 4:
			t.Errorf("a copied step gives the event %s (seq %d)", ev.Kind, ev.Seq)
		case ev.Kind == polyloop.EventModelCallFinished && ev.Reply != nil:
			tokens += ev.Reply.Usage.Tokens()
		}
	}
	if !slices.Equal(copied, []int{1, 2, 3, 4}) {
		t.Errorf("step_copied for steps %v, want 1 … 4", copied)
	}
	if tokens != res.Totals.Tokens() || tokens == 0 {
		t.Errorf("the events' model calls used %d tokens, the fork's totals %d", tokens, res.Totals.Tokens())
	}
}

// A fork written before log format 1.3 has no copied_under: it reads as it
// did (its own snapshot in force from run_started), resumes, and can be
// forked (its copies then count as run under its own snapshot).
func TestForkOfAnEarlierFormatReadsAsBefore(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	if _, err := newRunner(referenceScript(), store, newTestExec()).Run(ctx, "ref", equivalenceAgent(), polyloop.Task{Input: "reference task"}); err != nil {
		t.Fatal(err)
	}
	changed := equivalenceAgent()
	changed.System = "You are a careful agent."
	if _, err := newRunner(referenceScript(), store, newTestExec()).Fork(ctx, "ref", 4, "f", changed); err != nil {
		t.Fatal(err)
	}
	fork, _ := polyloop.ReadLog(ctx, store, "f")
	old := polyloop.RunLog{RunID: "old", Records: slices.Clone(fork.Records)}
	rs := *old.Records[0].Body.(*polyloop.RunStarted)
	src := *rs.ForkedFrom
	src.CopiedUnder = nil
	rs.RunID, rs.ForkedFrom, rs.LogVersion = "old", &src, "1.2"
	old.Records[0].Body = &rs
	// Cut before the fork's own steps end, and resume.
	var cut int
	for i, r := range old.Records {
		if sc, ok := r.Body.(*polyloop.StepCompleted); ok && sc.Step == 6 {
			cut = i + 1
		}
	}
	store.Put("old", old.Records[:cut])
	prefix := polyloop.RunLog{RunID: "old", Records: old.Records[:3]}
	if h := polyloop.History(prefix); h[0].Content != changed.System {
		t.Fatalf("a 1.2 fork's copies read under %q, want the fork's own %q as before", h[0].Content, changed.System)
	}
	res, err := newRunner(referenceScript(), store, newTestExec()).Resume(ctx, "old", changed)
	if err != nil || res.StopReason != polyloop.StopCompleted || res.Totals.CopiedSteps != 4 {
		t.Fatalf("resume of a 1.2 fork: %+v, %v", res, err)
	}
	if _, err := newRunner(referenceScript(), store, newTestExec()).Fork(ctx, "old", 5, "of-old", changed); err != nil {
		t.Fatal(err)
	}
	ff, _ := polyloop.ReadLog(ctx, store, "of-old")
	if u := ff.Started().ForkedFrom.CopiedUnder; len(u) != 1 || u[0].From != 1 || u[0].Snapshot.System != changed.System {
		t.Fatalf("a fork of a 1.2 fork: copied_under %+v", u)
	}
}
