package replaymodel_test

import (
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/diag"
)

// The recorded run every unit test replays, built by hand: step 1 calls a
// tool, step 2 is Invalid, step 3's model call failed.
const recordedRun = "rec-1"

var (
	readArgs   = []byte(`{"path":"notes.txt"}`)
	step1Reply = polyloop.ModelReply{
		Text:      "Reading.",
		ToolCalls: []polyloop.ToolCall{{ID: "call_1", Name: "read", Args: readArgs}},
		Usage:     polyloop.Usage{InputTokens: 20, OutputTokens: 7, CostUSD: ptr(0.002)},
		Model:     "gpt-test", FinishReason: "tool_calls", Attempts: 1,
	}
	step2Reply = polyloop.ModelReply{Text: "It has 12 lines.", Usage: polyloop.Usage{InputTokens: 40, OutputTokens: 6}, Model: "gpt-test", Attempts: 1}
	step3Fail  = diag.Diagnostic{Type: "*openaimodel.APIError", Message: "429 Too Many Requests", Fields: map[string]string{"http_status": "429"}}
	readSpec   = polyloop.ToolSpec{Name: "read", Parameters: []byte(`{"type":"object"}`), Replay: polyloop.ReplaySafe}
)

func ptr[T any](v T) *T { return &v }

func recordedSnapshot() polyloop.Snapshot {
	return polyloop.Snapshot{
		Agent: "reader", System: "You read files.", Task: polyloop.Task{Input: "How many lines has notes.txt?"},
		Tools: []polyloop.ToolSpec{readSpec}, Model: polyloop.ModelParams{Model: "gpt-test"},
	}
}

// recordedLog returns the hand-built log, a fresh copy each time.
func recordedLog() polyloop.RunLog {
	r1, r2 := step1Reply, step2Reply
	bodies := []polyloop.RecordBody{
		&polyloop.RunStarted{RunID: recordedRun, Snapshot: recordedSnapshot(), SnapshotHash: "sha256:recorded", LibraryVersion: "0.1.0"},
		&polyloop.ModelCallIntent{Step: 1, CallID: "m1.1", Attempt: 1},
		&polyloop.ModelCallResult{Step: 1, CallID: "m1.1", Reply: &r1},
		&polyloop.ActionIntent{Step: 1, ActionID: "a1", Attempt: 1, ModelCallID: "m1.1",
			Action: polyloop.Action{CallID: "call_1", Tool: "read", Args: readArgs}, Replay: polyloop.ReplaySafe},
		&polyloop.StepCompleted{Step: 1, ModelCallID: "m1.1", Decision: polyloop.DecisionAct, SettledAction: polyloop.SettledAction{ResultID: "a1", Outcome: &polyloop.StepOutcome{Status: polyloop.Executed}, Observation: "line 1\n...\nline 12"}},
		&polyloop.ModelCallIntent{Step: 2, CallID: "m2.1", Attempt: 1},
		&polyloop.ModelCallResult{Step: 2, CallID: "m2.1", Reply: &r2},
		&polyloop.StepCompleted{Step: 2, ModelCallID: "m2.1", Decision: polyloop.DecisionInvalid, Feedback: "Call a tool."},
		&polyloop.ModelCallIntent{Step: 3, CallID: "m3.1", Attempt: 1},
		&polyloop.ModelCallResult{Step: 3, CallID: "m3.1", Failure: &step3Fail},
		&polyloop.RunFinished{StopReason: polyloop.StopLLMError},
	}
	return logOf(recordedRun, bodies...)
}

func logOf(runID string, bodies ...polyloop.RecordBody) polyloop.RunLog {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	log := polyloop.RunLog{RunID: runID}
	for i, b := range bodies {
		log.Records = append(log.Records, polyloop.Record{Seq: int64(i), At: at, Body: b})
	}
	return log
}

// The messages the library shows the model at each step of the recorded
// run, written out by hand.
func messagesForStep(step int) []polyloop.Message {
	ms := []polyloop.Message{
		{Role: polyloop.RoleSystem, Content: "You read files."},
		{Role: polyloop.RoleUser, Content: "How many lines has notes.txt?"},
	}
	if step >= 2 {
		ms = append(ms,
			polyloop.Message{Role: polyloop.RoleAssistant, Content: "Reading.", ToolCalls: step1Reply.ToolCalls},
			polyloop.Message{Role: polyloop.RoleTool, Content: "line 1\n...\nline 12", ToolCallID: "call_1"})
	}
	if step >= 3 {
		ms = append(ms,
			polyloop.Message{Role: polyloop.RoleAssistant, Content: "It has 12 lines."},
			polyloop.Message{Role: polyloop.RoleUser, Content: "Call a tool.", Feedback: true})
	}
	return ms
}

func requestFor(step int) polyloop.ModelRequest {
	s := recordedSnapshot()
	return polyloop.ModelRequest{RunID: "replay-1", Step: step, CallID: "m" + string(rune('0'+step)) + ".1",
		Messages: messagesForStep(step), Tools: s.Tools, Params: s.Model}
}
