package storetest

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/workload"
)

// base is the timestamp the builders start from; each record is one
// millisecond after the previous one of its run.
var base = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// At returns the timestamp the builders give to record seq.
func At(seq int64) time.Time { return base.Add(time.Duration(seq) * time.Millisecond) }

// Snapshot returns a small, valid snapshot for agent and its hash.
func Snapshot(agent, task string) (polyloop.Snapshot, string) {
	temp := 0.0
	s := polyloop.Snapshot{
		Agent:  agent,
		System: "You are a careful agent.",
		Task:   polyloop.Task{Input: task},
		Tools: []polyloop.ToolSpec{{
			Name:        "noop",
			Description: "Does nothing, deterministically.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"i":{"type":"integer"},"note":{"type":"string"}}}`),
			Replay:      polyloop.ReplaySafe,
		}},
		Synthetic: polyloop.SyntheticObservations{
			NotExecuted: polyloop.DefaultNotExecuted,
			EnvError:    polyloop.DefaultEnvError,
		},
		Limits:      polyloop.Limits{MaxSteps: 1000, ObservationLimit: 4000},
		Model:       polyloop.ModelParams{Provider: "script", Model: "script-1", Temperature: &temp},
		ModelClient: polyloop.Component{Name: "storetest.model"},
		Parser:      polyloop.Component{Name: "storetest.parser"},
		Executor:    polyloop.Component{Name: "storetest.executor"},
	}
	h, err := s.Hash()
	if err != nil {
		panic(err) // a fixed snapshot always encodes
	}
	return s, h
}

// Started returns the RunStarted record (seq 0) of a run of agent.
func Started(runID, agent string) polyloop.Record {
	s, h := Snapshot(agent, "task of "+runID)
	return polyloop.Record{Seq: 0, At: At(0), Body: &polyloop.RunStarted{
		RunID: runID, Snapshot: s, SnapshotHash: h, LibraryVersion: polyloop.LibraryVersion,
	}}
}

// Intent returns a ModelCallIntent record.
func Intent(seq int64, step int) polyloop.Record {
	return polyloop.Record{Seq: seq, At: At(seq), Body: &polyloop.ModelCallIntent{
		Step: step, CallID: callID(step), Attempt: 1,
	}}
}

// Finished returns a RunFinished record.
func Finished(seq int64, reason polyloop.StopReason, steps int) polyloop.Record {
	return polyloop.Record{Seq: seq, At: At(seq), Body: &polyloop.RunFinished{
		StopReason: reason,
		Totals:     polyloop.Totals{Steps: steps, ModelCalls: steps, Actions: steps, InputTokens: int64(100 * steps), OutputTokens: int64(60 * steps)},
	}}
}

func callID(step int) string   { return fmt.Sprintf("m%d.1", step) }
func actionID(step int) string { return fmt.Sprintf("a%d", step) }

// StepBatches returns the two Appends of one acting step of workload W
// (package bench/workload: its texts and usage), as
// the runner batches them (SPEC §12): ModelCallResult(step) +
// ActionIntent(step) starting at seq, then StepCompleted(step) +
// ModelCallIntent(step+1) starting at seq+2.
func StepBatches(step int, seq int64) (before, after []polyloop.Record) {
	args := json.RawMessage(fmt.Sprintf(`{"i":%d,"note":%q}`, step, workload.Note))
	call := polyloop.ToolCall{ID: fmt.Sprintf("call_%d", step), Name: "noop", Args: args}
	reply := &polyloop.ModelReply{
		Text: workload.ReplyText, ToolCalls: []polyloop.ToolCall{call},
		Usage: polyloop.Usage{InputTokens: 100, OutputTokens: 60}, Model: "script-1",
		FinishReason: "tool_calls", Attempts: 1,
	}
	before = []polyloop.Record{
		{Seq: seq, At: At(seq), Body: &polyloop.ModelCallResult{Step: step, CallID: callID(step), Reply: reply}},
		{Seq: seq + 1, At: At(seq + 1), Body: &polyloop.ActionIntent{
			Step: step, ActionID: actionID(step), Attempt: 1, ModelCallID: callID(step),
			Action: polyloop.Action{CallID: call.ID, Tool: "noop", Args: args}, Replay: polyloop.ReplaySafe,
		}},
	}
	after = []polyloop.Record{
		{Seq: seq + 2, At: At(seq + 2), Body: &polyloop.StepCompleted{Step: step, ModelCallID: callID(step), Decision: polyloop.DecisionAct, SettledAction: polyloop.SettledAction{ResultID: actionID(step), Outcome: &polyloop.StepOutcome{Status: polyloop.Executed}, Observation: workload.ToolResult}}},
		Intent(seq+3, step+1),
	}
	return before, after
}
