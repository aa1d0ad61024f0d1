package bench

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/toolcallparser"
)

// The fixed texts of workload W.
var (
	// ReplyText is the text of every scripted reply: 200 characters.
	ReplyText = strings.Repeat("I will call the noop tool to make progress. ", 5)[:200]
	// Note is the "note" argument of every noop call: 50 characters.
	Note = strings.Repeat("a note of fifty characters ", 2)[:50]
	// ToolResult is what noop returns: 100 characters.
	ToolResult = strings.Repeat("noop result ", 9)[:100]
	// FinalAnswer is the reply to call S+1.
	FinalAnswer = "final answer"
)

// Workload is workload W with Steps action steps (see the package doc).
// Its zero value is not useful: Steps must be positive.
type Workload struct {
	Steps int
}

// Model returns the scripted model of W: Steps replies of ReplyText with
// one native tool call noop {"i": step, "note": Note}, then FinalAnswer.
// Every reply carries fixed usage (100 input and 60 output tokens, 5 output
// tokens for the answer), so the model's own cost does not grow with the
// history. The client is safe for concurrent use: its reply depends only on
// the step, so runs may share it.
func (w Workload) Model() *scriptmodel.Client {
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
func (Workload) Agent() polyloop.Agent {
	return polyloop.Agent{Name: "w", Tools: []polyloop.ToolSpec{{
		Name:        "noop",
		Description: "Does nothing and returns a fixed text.",
		Replay:      polyloop.ReplaySafe,
		Parameters:  json.RawMessage(`{"type":"object","properties":{"i":{"type":"integer"},"note":{"type":"string"}}}`),
	}}}
}

// Task returns W's task.
func (Workload) Task() polyloop.Task { return polyloop.Task{Input: "run workload W"} }

// Runner returns a Runner of W on store: W's model, the native tool-call
// parser and NoopExecutor, no event sinks.
func (w Workload) Runner(store polyloop.Store) *polyloop.Runner {
	return w.RunnerWithModel(store, w.Model())
}

// RunnerWithModel is Runner with a given model client (a wrapper around
// Model, or a model shared by several runners).
func (Workload) RunnerWithModel(store polyloop.Store, model polyloop.ModelClient) *polyloop.Runner {
	return &polyloop.Runner{
		Model:    model,
		Parser:   toolcallparser.New(toolcallparser.Options{}),
		Executor: NoopExecutor{},
		Store:    store,
	}
}

// RecordsPerRun is the number of records of an uninterrupted run of W:
// RunStarted, four per action step, three for the final step (model call
// intent, result, step record) and RunFinished.
func (w Workload) RecordsPerRun() int64 { return int64(1 + 4*w.Steps + 3 + 1) }

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
