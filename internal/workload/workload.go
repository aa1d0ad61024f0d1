// Package workload defines workload W, the standard workload of PolyLoop's
// benchmark (package bench; `polyloop bench`).
//
// A run of S steps. Each step is one call to a scripted model that returns
// at once 200 characters of text (ReplyText) and one native tool call noop
// with arguments {"i": <step>, "note": <50 characters>} (Note), and one
// execution of noop, which returns a fixed 100-character text (ToolResult).
// Call S+1 answers (FinalAnswer). The tool is replay-safe; the parser is
// toolcallparser (native tool calls); no event sinks. A run of W has S+1
// steps (StepCompleted records); every "per step" figure divides by S+1.
//
// The package imports only the library, scriptmodel and toolcallparser, so
// that any package's tests — the stores' own included — can run W without
// importing the stores package bench measures.
package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/toolcallparser"
)

// The fixed texts of W. They are cut to length, mid-word.
const (
	// ReplyText is the text of every scripted reply: 200 characters.
	ReplyText = "I will call the noop tool to make progress. I will call the noop tool to make progress. " +
		"I will call the noop tool to make progress. I will call the noop tool to make progress. I will call the noop too"
	// Note is the "note" argument of every noop call: 50 characters.
	Note = "a note of fifty characters a note of fifty charact"
	// ToolResult is what noop returns: 100 characters.
	ToolResult = "noop result noop result noop result noop result noop result noop result noop result noop result noop"
	// FinalAnswer is the reply to call S+1.
	FinalAnswer = "final answer"
)

// W is workload W with Steps action steps. Its zero value is not useful:
// Steps must be positive.
type W struct {
	Steps int
	// Executor executes noop; nil means NoopExecutor{}. (Tests may slow it
	// down or make it fail; a benchmark leaves it nil.)
	Executor polyloop.ActionExecutor
}

// Model returns the scripted model of W: Steps replies of ReplyText with
// one native tool call noop {"i": step, "note": Note}, then FinalAnswer.
// Every reply carries fixed usage (100 input and 60 output tokens, 5 output
// tokens for the answer), so the model's own cost does not grow with the
// history. The client is safe for concurrent use: its reply depends only on
// the step, so runs may share it.
func (w W) Model() *scriptmodel.Client {
	turns := make([]scriptmodel.Turn, 0, w.Steps+1)
	for i := 1; i <= w.Steps; i++ {
		args, err := json.Marshal(map[string]any{"i": i, "note": Note})
		if err != nil {
			panic(err) // a map of an int and a string always marshals
		}
		turns = append(turns, scriptmodel.Turn{
			Text:      ReplyText,
			ToolCalls: []polyloop.ToolCall{{ID: "call_" + strconv.Itoa(i), Name: "noop", Args: args}},
			Usage:     &polyloop.Usage{InputTokens: 100, OutputTokens: 60},
		})
	}
	final := scriptmodel.Turn{Text: FinalAnswer, Usage: &polyloop.Usage{InputTokens: 100, OutputTokens: 5}}
	return scriptmodel.New(append(turns, final)...)
}

// Agent returns W's agent: one replay-safe tool, noop, and no limits.
func (W) Agent() polyloop.Agent {
	return polyloop.Agent{Name: "w", Tools: []polyloop.ToolSpec{{
		Name:        "noop",
		Description: "Does nothing and returns a fixed text.",
		Replay:      polyloop.ReplaySafe,
		Parameters:  json.RawMessage(`{"type":"object","properties":{"i":{"type":"integer"},"note":{"type":"string"}}}`),
	}}}
}

// Task returns W's task.
func (W) Task() polyloop.Task { return polyloop.Task{Input: "run workload W"} }

// Runner returns a Runner of W on store: W's model, the native tool-call
// parser and W's executor, no event sinks.
func (w W) Runner(store polyloop.Store) *polyloop.Runner {
	return w.RunnerWithModel(store, w.Model())
}

// RunnerWithModel is Runner with a given model client (a wrapper around
// Model, or a model shared by several runners).
func (w W) RunnerWithModel(store polyloop.Store, model polyloop.ModelClient) *polyloop.Runner {
	exec := w.Executor
	if exec == nil {
		exec = NoopExecutor{}
	}
	return &polyloop.Runner{
		Model:    model,
		Parser:   toolcallparser.New(toolcallparser.Options{}),
		Executor: exec,
		Store:    store,
	}
}

// Check verifies that a run of W did what W says — completed with
// FinalAnswer after Steps+1 steps and Steps actions — so that a figure never
// comes from a run that went wrong.
func (w W) Check(res polyloop.RunResult) error {
	if res.StopReason != polyloop.StopCompleted || res.FinalAnswer != FinalAnswer ||
		res.Totals.Steps != w.Steps+1 || res.Totals.Actions != w.Steps {
		return fmt.Errorf("workload W: run %s (S=%d) ended %s with %d steps and %d actions, want completed with %d and %d",
			res.RunID, w.Steps, res.StopReason, res.Totals.Steps, res.Totals.Actions, w.Steps+1, w.Steps)
	}
	return nil
}

// RecordsPerRun is the number of records of an uninterrupted run of W:
// RunStarted, four per action step, three for the final step (model call
// intent, result, step record) and RunFinished.
func (w W) RecordsPerRun() int64 { return int64(1 + 4*w.Steps + 3 + 1) }

// NoopExecutor is W's environment: every action is executed and observes
// ToolResult. It is safe for concurrent use.
type NoopExecutor struct{}

// Execute implements polyloop.ActionExecutor.
func (NoopExecutor) Execute(ctx context.Context, _ polyloop.Action) (polyloop.ActionOutcome, error) {
	if err := ctx.Err(); err != nil {
		return polyloop.ActionOutcome{}, err
	}
	return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: ToolResult}, nil
}
