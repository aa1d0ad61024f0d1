package polyloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/scriptmodel"
)

// testParser reads native tool calls: each call is an action of the batch,
// in the reply's order; none is Final with the text; a text starting
// "INVALID" is Invalid.
type testParser struct{}

func (testParser) Parse(r polyloop.ModelReply) polyloop.Decision {
	switch {
	case strings.HasPrefix(r.Text, "INVALID"):
		return polyloop.Invalid{Feedback: "feedback: " + r.Text}
	case strings.HasPrefix(r.Text, "PANIC"):
		panic("testParser: asked to panic")
	case len(r.ToolCalls) > 0:
		var act polyloop.Act
		for _, tc := range r.ToolCalls {
			act.Actions = append(act.Actions, polyloop.Action{CallID: tc.ID, Tool: tc.Name, Args: tc.Args})
		}
		return act
	}
	return polyloop.Final{Answer: r.Text}
}

// testExec is a deterministic environment with a ledger of executions.
//   - "echo" {"text": s}: executed, observation s (replay-safe).
//   - "send" {"to": s}: executed, a side effect recorded in the ledger (never replay).
//   - "refuse": not_executed.
//   - "broken": env_error.
//   - "finish": executed with Done.
//   - "fail": returns errFail (outside the protocol).
//   - "panic": panics.
//   - "block": waits for cancellation.
type testExec struct {
	mu     sync.Mutex
	ledger map[string]int // "tool:args" → executions
}

var errFail = errors.New("testExec: adapter bug")

func newTestExec() *testExec { return &testExec{ledger: map[string]int{}} }

func (e *testExec) count(key string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ledger[key]
}

func (e *testExec) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	e.mu.Lock()
	e.ledger[a.Tool+":"+string(a.Args)]++
	e.mu.Unlock()
	var args map[string]string
	_ = json.Unmarshal(a.Args, &args)
	switch a.Tool {
	case "echo":
		return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: args["text"]}, nil
	case "send":
		return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "sent to " + args["to"]}, nil
	case "refuse":
		return polyloop.ActionOutcome{Status: polyloop.NotExecuted, Observation: "executor's own refusal text"}, nil
	case "broken":
		return polyloop.ActionOutcome{Status: polyloop.EnvError, Observation: "executor's own env text"}, nil
	case "finish":
		return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "done", Done: true}, nil
	case "fail":
		return polyloop.ActionOutcome{}, fmt.Errorf("execute %s: %w", a.Tool, errFail)
	case "panic":
		panic("testExec: asked to panic")
	case "block":
		<-ctx.Done()
		return polyloop.ActionOutcome{}, ctx.Err()
	}
	return polyloop.ActionOutcome{Status: polyloop.NotExecuted, Observation: "unknown tool " + a.Tool}, nil
}

func testAgent() polyloop.Agent {
	return polyloop.Agent{
		Name:   "tester",
		System: "You are a test agent.",
		Tools: []polyloop.ToolSpec{
			{Name: "echo", Description: "echo text", Parameters: json.RawMessage(`{"type":"object"}`), Replay: polyloop.ReplaySafe},
			{Name: "send", Description: "send a message", Replay: polyloop.NeverReplay},
			{Name: "refuse", Replay: polyloop.ReplaySafe},
			{Name: "broken", Replay: polyloop.ReplaySafe},
			{Name: "finish", Replay: polyloop.ReplaySafe},
			{Name: "fail", Replay: polyloop.ReplaySafe},
			{Name: "failnever", Replay: polyloop.NeverReplay},
			{Name: "panic", Replay: polyloop.NeverReplay},
			{Name: "block", Replay: polyloop.ReplaySafe},
		},
		Limits: polyloop.Limits{MaxSteps: 50},
		Model:  polyloop.ModelParams{Provider: "script", Model: "script-1"},
	}
}

func call(step int, tool string, args map[string]string) scriptmodel.Turn {
	return scriptmodel.Call(fmt.Sprintf("call_%d", step), tool, args)
}

// kinds lists the kinds of a log's records.
func kinds(log polyloop.RunLog) []string {
	out := make([]string, len(log.Records))
	for i, r := range log.Records {
		out[i] = string(r.Kind())
	}
	return out
}

func lastKind(log polyloop.RunLog) polyloop.RecordKind {
	return log.Records[len(log.Records)-1].Kind()
}

// ledgerFor returns the ledger entries of one tool.
func (e *testExec) ledgerFor(tool string) map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string]int{}
	for k, n := range e.ledger {
		if strings.HasPrefix(k, tool+":") {
			out[k] = n
		}
	}
	return out
}
