package replaymodel_test

import (
	"context"
	"errors"
	"strings"
	"sync"
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
	src, _ := polyloop.ReadLog(ctx, store, "rec")
	src.RunID = "rec"
	runner := polyloop.Runner{Parser: toolcallparser.New(toolcallparser.Options{}), Executor: fileExec{}, Store: store}
	res, diff, err := replaymodel.Replay(ctx, runner, src, "same", e2eAgent, replaymodel.Options{})
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("replay: %+v, %v", res, err)
	}
	if diff.First != nil {
		t.Fatalf("an unchanged replay diverges at %+v", diff.First)
	}
	replay, _ := polyloop.ReadLog(ctx, store, "same")
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

// stopping is fileExec that asks for a stop (closes stop) during its
// first action.
type stopping struct {
	fileExec
	stop chan struct{}
	once sync.Once
}

func (e *stopping) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	e.once.Do(func() { close(e.stop) })
	return e.fileExec.Execute(ctx, a)
}

// Resume continues a replay that a stop request ended at a step boundary,
// with a new client on the source (the same result and no divergence), and
// refuses a run that is not a replay of the source, or none, writing
// nothing.
func TestResumeContinuesAReplay(t *testing.T) {
	ctx := context.Background()
	store := record(t, e2eTurns...)
	src, _ := polyloop.ReadLog(ctx, store, "rec")
	src.RunID = "rec"
	stop := make(chan struct{})
	exec := &stopping{stop: stop}
	runner := polyloop.Runner{Parser: toolcallparser.New(toolcallparser.Options{}), Executor: exec, Store: store}
	_, _, err := replaymodel.Replay(polyloop.WithStopRequest(ctx, stop), runner, src, "rp", e2eAgent, replaymodel.Options{})
	if !errors.Is(err, polyloop.ErrStopRequested) {
		t.Fatalf("the stopped replay: %v, want ErrStopRequested", err)
	}
	if stopped, _ := polyloop.ReadLog(ctx, store, "rp"); stopped.Finished() != nil || len(stopped.Records) == 0 {
		t.Fatalf("the stopped replay has %d records, finished: %v", len(stopped.Records), stopped.Finished() != nil)
	}
	res, diff, err := replaymodel.Resume(ctx, runner, src, "rp", e2eAgent, replaymodel.Options{})
	if err != nil || res.StopReason != polyloop.StopCompleted || diff.First != nil {
		t.Fatalf("resumed replay: %+v, diverges at %+v, %v", res, diff.First, err)
	}

	if _, _, err := replaymodel.Resume(ctx, runner, src, "rec", e2eAgent, replaymodel.Options{}); !errors.Is(err, replaymodel.ErrNotAReplay) {
		t.Errorf("resuming the source as its own replay: %v, want ErrNotAReplay", err)
	}
	if _, _, err := replaymodel.Resume(ctx, runner, src, "none", e2eAgent, replaymodel.Options{}); !errors.Is(err, polyloop.ErrRunNotFound) {
		t.Errorf("resuming a run that does not exist: %v, want ErrRunNotFound", err)
	}
	if log, _ := polyloop.ReadLog(ctx, store, "none"); !log.Empty() {
		t.Error("resuming a missing replay wrote to it")
	}
}
