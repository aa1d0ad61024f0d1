package replaymodel_test

import (
	"context"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/replaymodel"
	"github.com/polyloop/polyloop/toolcallparser"
)

// rejectStep is a parser that rejects the reply of one step (it recognizes
// the reply by its tool call's arguments) and otherwise reads tool calls.
type rejectStep struct{ path string }

func (p rejectStep) Parse(r polyloop.ModelReply) polyloop.Decision {
	if len(r.ToolCalls) > 0 && strings.Contains(string(r.ToolCalls[0].Args), p.path) {
		return polyloop.Invalid{Feedback: "no reading " + p.path}
	}
	return toolcallparser.New(toolcallparser.Options{}).Parse(r)
}

// Replay of an unchanged configuration diverges nowhere and is stored as
// its own run, linked to the recorded one; with a parser changed to reject
// one reply, it names that step.
func TestReplayReportsTheFirstDivergence(t *testing.T) {
	ctx := context.Background()
	store := record(t, e2eTurns...)
	src, _ := store.ReadLog(ctx, "rec")
	src.RunID = "rec"
	runner := polyloop.Runner{Parser: toolcallparser.New(toolcallparser.Options{}), Executor: fileExec{}, Store: store}
	res, diff, err := replaymodel.Replay(ctx, runner, src, "same", e2eAgent, replaymodel.Options{})
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("replay: %+v, %v", res, err)
	}
	if diff.First != nil {
		t.Fatalf("an unchanged replay diverges at %+v", diff.First)
	}
	replay, _ := store.ReadLog(ctx, "same")
	if r := replay.Started().ReplayOf; r == nil || r.RunID != "rec" || r.SnapshotHash != src.Started().SnapshotHash {
		t.Fatalf("replay_of %+v", r)
	}

	runner.Parser = rejectStep{path: "b.txt"}
	res, diff, err = replaymodel.Replay(ctx, runner, src, "changed", e2eAgent, replaymodel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff.First == nil || diff.First.Step != 2 || diff.First.What != "decision" {
		t.Fatalf("divergence %+v (result %+v), want the decision of step 2", diff.First, res)
	}
}
