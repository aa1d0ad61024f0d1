// Delegate: a research agent hands a sub-question to a child agent. The
// child fails (its environment breaks), and the parent receives that failure
// explicitly and substitutes a fallback answer. The process "crashes" between
// the child finishing and the parent recording its reception; on resume the
// finished child is not run again, the handler runs once, and the parent
// completes.
//
//	go run ./examples/delegate
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/funcexec"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/toolcallparser"
)

type question struct {
	Question string `json:"question" jsonschema:"the sub-question to research"`
}

type lookup struct {
	Query string `json:"query"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "delegate:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	store := &crashOnReception{Store: memstore.New()}

	// The child: a researcher whose search environment is down.
	childTools := funcexec.New()
	funcexec.MustRegister(childTools, "search", "Search the archive.", polyloop.ReplaySafe,
		func(ctx context.Context, a lookup) (string, error) {
			return "", funcexec.EnvError(errors.New("archive unreachable: connection refused"))
		})
	childModel := scriptmodel.New(scriptmodel.Call("c1", "search", map[string]string{"query": "founding year of the archive"}))
	child := polyloop.Child{
		Runner: &polyloop.Runner{Model: childModel, Parser: toolcallparser.New(toolcallparser.Options{}), Executor: childTools, Store: store},
		Agent:  polyloop.Agent{Name: "researcher", Tools: childTools.ToolSpecs(), Limits: polyloop.Limits{MaxSteps: 5}},
	}

	// The parent: delegates, and says at the call site how it receives a failure.
	var handled atomic.Int32
	parentTools := funcexec.New()
	funcexec.MustRegister(parentTools, "delegate", "Ask a researcher a sub-question.", polyloop.ReplaySafe,
		func(ctx context.Context, q question) (string, error) {
			return polyloop.InvokeChild(ctx, child, polyloop.Task{Input: q.Question}, polyloop.Receive[string]{
				Succeeded: func(r polyloop.RunResult) (string, error) { return r.FinalAnswer, nil },
				Failed: func(f *polyloop.ChildFailure) (string, error) {
					handled.Add(1)
					return fmt.Sprintf("unknown (the researcher stopped with %s); answer without it", f.StopReason), nil
				},
			})
		})
	parent := &polyloop.Runner{
		Model: scriptmodel.New(
			scriptmodel.Call("p1", "delegate", map[string]string{"question": "When was the archive founded?"}),
			scriptmodel.Reply("The founding year could not be established; the archive was unreachable."),
		),
		Parser:   toolcallparser.New(toolcallparser.Options{}),
		Executor: parentTools,
		Store:    store,
	}
	agent := polyloop.Agent{Name: "lead", Tools: parentTools.ToolSpecs(), Limits: polyloop.Limits{MaxSteps: 5}}

	fmt.Println("== run the lead agent; the process dies as it records the child's reception")
	_, err := parent.Run(ctx, "lead-1", agent, polyloop.Task{Input: "Write a note on the archive's history."})
	if !errors.Is(err, errCrash) {
		return fmt.Errorf("expected the simulated crash, got %v", err)
	}
	fmt.Println("   ", err)
	childLog, _ := polyloop.ReadLog(ctx, store, "lead-1/1.1")
	fmt.Printf("    child lead-1/1.1 finished: %s (model calls so far: %d)\n", childLog.Finished().StopReason, childModel.Calls())

	fmt.Println("== resume the lead agent")
	res, err := parent.Resume(ctx, "lead-1", agent)
	if err != nil {
		return err
	}
	fmt.Printf("    plan: %s — %s\n", res.Plan.Action, res.Plan.Reason)
	fmt.Printf("    lead: %s — %q\n", res.StopReason, res.FinalAnswer)
	fmt.Printf("    child model calls in all: %d (the finished child was not run again)\n", childModel.Calls())
	fmt.Printf("    Failed handler runs: %d (its first reception was lost in the crash, so it ran again; once recorded, never again)\n", handled.Load())

	log, _ := polyloop.ReadLog(ctx, store, "lead-1")
	for _, r := range log.Receptions() {
		fmt.Printf("    reception recorded: child %s %s, %s by %s: %s\n", r.ChildRunID, r.StopReason, r.Reception, r.Handler, r.Value)
	}
	return nil
}

var errCrash = errors.New("simulated crash while recording a reception")

// crashOnReception fails the first append that carries a child reception,
// as a process dying at that moment would.
type crashOnReception struct {
	*memstore.Store
	crashed atomic.Bool
}

func (c *crashOnReception) Append(ctx context.Context, runID string, recs []polyloop.Row) error {
	for _, r := range recs {
		if r.Kind == polyloop.KindChildReception && c.crashed.CompareAndSwap(false, true) {
			return errCrash
		}
	}
	return c.Store.Append(ctx, runID, recs)
}
