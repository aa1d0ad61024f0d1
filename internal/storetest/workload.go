package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/toolcallparser"
)

// Workload is workload W of issue 10: a run of Steps steps, each one model
// call answering about 200 characters of text and one call of the
// replay-safe tool noop with {"i": step, "note": <50 characters>}, and one
// execution of noop returning a fixed 100-character observation; call
// Steps+1 answers the final answer. The parser reads native tool calls.
type Workload struct {
	Steps int
	// Exec executes noop; nil means NoopExecutor{}.
	Exec polyloop.ActionExecutor
}

// FinalAnswer is the answer of workload W's last call.
const FinalAnswer = "All noop calls are done."

// Agent returns workload W's agent.
func (w Workload) Agent() polyloop.Agent {
	return polyloop.Agent{
		Name:   "workload-w",
		System: "You call noop until told otherwise, then answer.",
		Tools: []polyloop.ToolSpec{{
			Name: "noop", Description: "Does nothing and says so.", Replay: polyloop.ReplaySafe,
			Parameters: json.RawMessage(`{"type":"object","properties":{"i":{"type":"integer"},"note":{"type":"string"}},"required":["i","note"]}`),
		}},
		Limits: polyloop.Limits{MaxSteps: w.Steps + 1, ObservationLimit: 4000},
		Model:  polyloop.ModelParams{Provider: "script", Model: "script-1"},
	}
}

// Runner returns a runner of workload W on store.
func (w Workload) Runner(store polyloop.Store) *polyloop.Runner {
	turns := make([]scriptmodel.Turn, 0, w.Steps+1)
	for i := 1; i <= w.Steps; i++ {
		t := scriptmodel.Call(fmt.Sprintf("call_%d", i), "noop", map[string]any{"i": i, "note": noteText})
		t.Text = replyText
		turns = append(turns, t)
	}
	turns = append(turns, scriptmodel.Reply(FinalAnswer))
	exec := w.Exec
	if exec == nil {
		exec = NoopExecutor{}
	}
	return &polyloop.Runner{
		Model:    scriptmodel.New(turns...),
		Parser:   toolcallparser.New(toolcallparser.Options{}),
		Executor: exec,
		Store:    store,
	}
}

// Task returns workload W's task.
func (w Workload) Task() polyloop.Task {
	return polyloop.Task{Input: fmt.Sprintf("Call noop %d times.", w.Steps)}
}

// Run runs workload W as runID to completion and checks its result.
func (w Workload) Run(ctx context.Context, r *polyloop.Runner, runID string) error {
	res, err := r.Run(ctx, runID, w.Agent(), w.Task())
	if err != nil {
		return err
	}
	return w.Check(res)
}

// Check verifies that a result is workload W's completed run.
func (w Workload) Check(res polyloop.RunResult) error {
	if res.StopReason != polyloop.StopCompleted || res.FinalAnswer != FinalAnswer || res.Totals.Steps != w.Steps+1 {
		return fmt.Errorf("workload W run %s: stop %s, answer %q, %d steps; want completed, %q, %d steps",
			res.RunID, res.StopReason, res.FinalAnswer, res.Totals.Steps, FinalAnswer, w.Steps+1)
	}
	return nil
}

// NoopExecutor executes workload W's noop tool: a fixed 100-character
// observation, whatever the arguments. Any other tool is not executed.
type NoopExecutor struct{}

// NoopObservation is what noop returns.
var NoopObservation = strings.Repeat("noop ok. ", 12)[:100]

// Execute implements polyloop.ActionExecutor.
func (NoopExecutor) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	if err := ctx.Err(); err != nil {
		return polyloop.ActionOutcome{}, err
	}
	if a.Tool != "noop" {
		return polyloop.ActionOutcome{Status: polyloop.NotExecuted, Observation: "unknown tool " + a.Tool}, nil
	}
	return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: NoopObservation}, nil
}
