package polyloop_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/scriptmodel"
)

// A fork whose copied prefix holds a step that invoked a child does not run
// that child again: the step, its reception and the child's answer are the
// source's. A fork before that step invokes a child of its own, under an id
// derived from the fork, and leaves the source's child alone.
func TestForkWithAChildInThePrefix(t *testing.T) {
	ctx := context.Background()
	f := newChildFixture([]scriptmodel.Turn{scriptmodel.Reply("42"), scriptmodel.Reply("43")}, answerOr("none"))
	if _, err := f.parent.Run(ctx, "src", parentAgent(), polyloop.Task{Input: "q"}); err != nil {
		t.Fatal(err)
	}
	if n := f.exec.invoked.Load(); n != 1 {
		t.Fatalf("the source invoked its child %d times", n)
	}
	runsBefore := listRunIDs(t, f)
	srcRecords := int64(len(readLog(t, f, "src").Records))

	// scriptmodel answers by step: the same script as the source's.
	after := &polyloop.Runner{Model: scriptmodel.New(call(1, "delegate", nil), scriptmodel.Reply("parent done")), Parser: testParser{}, Executor: f.exec, Store: f.store}
	res, err := after.Fork(ctx, "src", 1, "fork-after", parentAgent())
	if err != nil {
		t.Fatal(err)
	}
	if n := f.exec.invoked.Load(); n != 1 {
		t.Fatalf("a fork after the delegating step invoked the child again (%d invocations)", n)
	}
	if res.FinalAnswer != "parent done" || res.Totals.CopiedSteps != 1 {
		t.Fatalf("fork after the child: %+v", res)
	}
	if got, want := polyloop.History(readLog(t, f, "fork-after")), polyloop.History(readLog(t, f, "src")); !reflect.DeepEqual(got, want) {
		t.Fatalf("the fork's history differs from the source's:\n%s", historyDiff(got, want))
	}
	if added := len(listRunIDs(t, f)) - len(runsBefore); added != 1 {
		t.Fatalf("a fork after the child's step made %d runs, want the fork only", added)
	}

	before := &polyloop.Runner{Model: scriptmodel.New(call(1, "delegate", nil), scriptmodel.Reply("parent done")),
		Parser: testParser{}, Executor: f.exec, Store: f.store}
	res, err = before.Fork(ctx, "src", 0, "fork-before", parentAgent())
	if err != nil {
		t.Fatal(err)
	}
	if n := f.exec.invoked.Load(); n != 2 || f.handled.Load() != 2 {
		t.Fatalf("a fork before the delegating step: %d invocations, %d receptions handled; want 2 and 2", n, f.handled.Load())
	}
	if res.StopReason != polyloop.StopCompleted || res.FinalAnswer != "parent done" {
		t.Fatalf("fork before the child: %+v", res)
	}
	if src := readLog(t, f, "src"); int64(len(src.Records)) != srcRecords {
		t.Fatalf("the source's log changed: %d records, had %d", len(src.Records), srcRecords)
	}
	if added := len(listRunIDs(t, f)) - len(runsBefore); added != 3 {
		t.Fatalf("after both forks %d new runs, want 3 (two forks and the second fork's own child)", added)
	}
}

func readLog(t *testing.T, f *childFixture, id string) polyloop.RunLog {
	t.Helper()
	l, err := polyloop.ReadLog(context.Background(), f.store, id)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func listRunIDs(t *testing.T, f *childFixture) []string {
	t.Helper()
	sums, err := f.store.ListRuns(context.Background(), polyloop.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(sums))
	for i, s := range sums {
		ids[i] = s.RunID
	}
	return ids
}
