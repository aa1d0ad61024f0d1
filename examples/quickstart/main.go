// Quickstart: a scripted model, a Go function as a tool, the in-memory store.
// The run is interrupted in the middle of an action (its context is
// cancelled while the tool is running), then resumed from the log; the
// trajectory and the resume decision are printed.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/funcexec"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
)

type lookupArgs struct {
	City string `json:"city" jsonschema:"the city to look up"`
}

var populations = map[string]string{"Lyon": "522,250", "Turin": "841,600"}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	interrupt := make(chan struct{})
	var calls atomic.Int32

	tools := funcexec.New()
	funcexec.MustRegister(tools, "population", "Look up the population of a city.", polyloop.ReplaySafe,
		func(ctx context.Context, a lookupArgs) (string, error) {
			// The second lookup of the first process is where we pull the plug.
			if calls.Add(1) == 2 {
				close(interrupt)
				<-ctx.Done()
				return "", ctx.Err()
			}
			if p, ok := populations[a.City]; ok {
				return a.City + ": " + p, nil
			}
			return "", fmt.Errorf("no data for %q", a.City)
		})

	model := scriptmodel.New(
		scriptmodel.Call("call_1", "population", map[string]string{"city": "Lyon"}),
		scriptmodel.Call("call_2", "population", map[string]string{"city": "Turin"}),
		scriptmodel.Reply("Turin (841,600) is larger than Lyon (522,250)."),
	)
	agent := polyloop.Agent{
		Name:   "quickstart",
		System: "Answer questions about cities using the population tool.",
		Tools:  tools.ToolSpecs(),
		Limits: polyloop.Limits{MaxSteps: 10},
	}
	store := memstore.New()
	runner := &polyloop.Runner{Model: model, Parser: toolCalls{}, Executor: tools, Store: store}

	fmt.Println("== run: which is larger, Lyon or Turin?")
	runCtx, cancel := context.WithCancel(ctx)
	go func() { <-interrupt; cancel() }()
	_, err := runner.Run(runCtx, "quickstart-1", agent, polyloop.Task{Input: "Which is larger, Lyon or Turin?"})
	if !errors.Is(err, context.Canceled) {
		return fmt.Errorf("expected the run to be interrupted, got %v", err)
	}
	fmt.Println("   interrupted during step 2's action:", err)

	fmt.Println("== resume")
	res, err := runner.Resume(ctx, "quickstart-1", agent)
	if err != nil {
		return err
	}
	fmt.Printf("   plan: %s (step %d) — %s\n", res.Plan.Action, res.Plan.Step, res.Plan.Reason)
	fmt.Printf("   finished: %s, %d steps, %d tokens\n   answer: %s\n", res.StopReason, res.Totals.Steps, res.Totals.Tokens(), res.FinalAnswer)

	log, err := polyloop.ReadLog(ctx, store, "quickstart-1")
	if err != nil {
		return err
	}
	fmt.Println("== trajectory (the log is the single source of truth)")
	printLog(log)
	return nil
}

func printLog(log polyloop.RunLog) {
	for _, r := range log.Records {
		var detail string
		switch b := r.Body.(type) {
		case *polyloop.ModelCallIntent:
			detail = fmt.Sprintf("step %d call %s", b.Step, b.CallID)
		case *polyloop.ModelCallResult:
			detail = fmt.Sprintf("step %d reply %q %s", b.Step, b.Reply.Text, toolCallText(b.Reply.ToolCalls))
		case *polyloop.ActionIntent:
			detail = fmt.Sprintf("step %d %s attempt %d %s(%s) [%s]", b.Step, b.ActionID, b.Attempt, b.Action.Tool, b.Action.Args, b.Replay)
		case *polyloop.StepCompleted:
			detail = fmt.Sprintf("step %d %s %q", b.Step, b.Decision, b.Observation)
		case *polyloop.RunFinished:
			detail = fmt.Sprintf("%s %q", b.StopReason, b.FinalAnswer)
		}
		fmt.Printf("   %2d %-18s %s\n", r.Seq, r.Kind(), detail)
	}
}

func toolCallText(calls []polyloop.ToolCall) string {
	var parts []string
	for _, c := range calls {
		parts = append(parts, c.Name+string(c.Args))
	}
	return strings.Join(parts, " ")
}

// toolCalls is the smallest native-tool-call parser: the calls of a reply
// are one batch of actions, in order; none is the final answer.
type toolCalls struct{}

func (toolCalls) Parse(r polyloop.ModelReply) polyloop.Decision {
	if len(r.ToolCalls) == 0 {
		return polyloop.Final{Answer: r.Text}
	}
	var act polyloop.Act
	for _, c := range r.ToolCalls {
		act.Actions = append(act.Actions, polyloop.Action{CallID: c.ID, Tool: c.Name, Args: c.Args})
	}
	return act
}
