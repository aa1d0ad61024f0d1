package polylooptest

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/diag"
)

// sampleText mixes scripts, emoji, escapes, a NUL and invalid UTF-8: what
// observations and replies really hold.
const sampleText = "héllo 世界 مرحبا 🙂👩‍💻 \"quotes\" \\ \t\n\r \u0000 \u2028 \ufeff <b>&amp;</b> ' %s %% _ \xff\xfe"

// sampleTime is the base timestamp of sample records, at microsecond
// precision (what PostgreSQL keeps).
var sampleTime = time.Date(2025, 3, 14, 15, 9, 26, 535897000, time.UTC)

// sampleSnapshot is a snapshot with every field set.
func sampleSnapshot(runID string) polyloop.Snapshot {
	temp, seed := 0.5, int64(7)
	return polyloop.Snapshot{
		Agent:  "polylooptest-agent",
		System: "system " + sampleText,
		Task:   polyloop.Task{Input: "task " + sampleText, Meta: map[string]string{"run": runID, "键": "值"}},
		Tools: []polyloop.ToolSpec{{
			Name: "search", Description: "search " + sampleText,
			Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`),
			Replay:     polyloop.ReplaySafe,
		}},
		Synthetic: polyloop.SyntheticObservations{NotExecuted: polyloop.DefaultNotExecuted, EnvError: polyloop.DefaultEnvError},
		Limits:    polyloop.Limits{MaxSteps: 10, MaxTokens: 1e6, MaxCostUSD: 1.5, ObservationLimit: 4096},
		Model: polyloop.ModelParams{Provider: "test", Model: "m", Temperature: &temp, Seed: &seed,
			Stop: []string{"STOP"}, Extra: map[string]any{"k": "v"}},
		ModelClient: polyloop.Component{Name: "client", Config: json.RawMessage(`{"a":1}`)},
		Parser:      polyloop.Component{Name: "parser"},
		Executor:    polyloop.Component{Name: "executor"},
	}
}

// sampleBodies returns one body of each of the eight record kinds, the
// observation being large bytes long.
func sampleBodies(runID string, large int) []polyloop.RecordBody {
	cost := 0.0125
	big := strings.Repeat("observation ✓ ", large/len("observation ✓ ")+1)[:large]
	reply := &polyloop.ModelReply{
		Text:      "reply " + sampleText,
		ToolCalls: []polyloop.ToolCall{{ID: "call_1", Name: "search", Args: json.RawMessage(`{"q":"世界 \u0000"}`)}},
		Usage:     polyloop.Usage{InputTokens: 120, OutputTokens: 30, CachedTokens: 5, CostUSD: &cost},
		Model:     "model-1", FinishReason: "tool_calls", Attempts: 1, RequestID: "req-1",
	}
	// The action is the reply's tool call: the log refers to it.
	action := polyloop.Action{CallID: "call_1", Tool: "search", Args: reply.ToolCalls[0].Args}
	failure := &diag.Diagnostic{Type: "*errors.errorString", Message: "boom " + sampleText,
		Fields: map[string]string{"http_status": "500"}, Causes: []diag.Diagnostic{{Type: "*net.OpError", Message: "refused"}}}
	return []polyloop.RecordBody{
		&polyloop.RunStarted{RunID: runID, Snapshot: sampleSnapshot(runID), SnapshotHash: "sha256:abc", LibraryVersion: polyloop.LibraryVersion,
			Parent: &polyloop.ParentRef{RunID: "parent-" + runID, Step: 2, Index: 1}},
		&polyloop.ModelCallIntent{Step: 1, CallID: "m1.1", Attempt: 1},
		&polyloop.ModelCallResult{Step: 1, CallID: "m1.1", Reply: reply},
		&polyloop.ActionIntent{Step: 1, ActionID: "a1", Attempt: 1, ModelCallID: "m1.1", Action: action, Replay: polyloop.ReplaySafe, ToolCall: 1},
		&polyloop.StepCompleted{Step: 1, ModelCallID: "m1.1", Decision: polyloop.DecisionAct, SettledAction: polyloop.SettledAction{ResultID: "a1",
			Outcome: &polyloop.StepOutcome{Status: polyloop.Executed, ExecutorTruncated: 3}, Observation: big, TruncatedChars: 3}},
		&polyloop.ConfigOverride{PreviousHash: "sha256:abc", SnapshotHash: "sha256:def", Fields: []string{"model.temperature"}, Snapshot: sampleSnapshot(runID)},
		&polyloop.ChildReception{Step: 2, Index: 0, ChildRunID: runID + "/2.0", StopReason: polyloop.StopEnvError, Handler: "Failed",
			Reception: polyloop.ReceptionFailed, Value: json.RawMessage(`{"v":"✓"}`), Failure: failure},
		&polyloop.ModelCallResult{Step: 2, CallID: "m2.1", Failure: failure},
		&polyloop.RunFinished{StopReason: polyloop.StopEnvError, FinalAnswer: "answer " + sampleText,
			Totals: polyloop.Totals{Steps: 1, ModelCalls: 2, Actions: 1, InputTokens: 120, OutputTokens: 30, CostUSD: 0.0125, CostUnknown: true, UnknownModelCalls: 1},
			Sinks:  []polyloop.SinkReport{{Index: 0, Sink: "*x.Sink", Errors: 3, Disabled: true, LastFailure: "nope"}}},
	}
}

// records numbers bodies from seq on, one microsecond apart.
func records(seq int64, bodies ...polyloop.RecordBody) []polyloop.Record {
	out := make([]polyloop.Record, len(bodies))
	for i, b := range bodies {
		s := seq + int64(i)
		out[i] = polyloop.Record{Seq: s, At: sampleTime.Add(time.Duration(s) * time.Microsecond), Body: b}
	}
	return out
}

// intents returns n small records starting at seq, tagged with tag so that
// competing writers' records can be told apart.
func intents(seq int64, n int, tag string) []polyloop.Record {
	bodies := make([]polyloop.RecordBody, n)
	for i := range bodies {
		bodies[i] = &polyloop.ModelCallIntent{Step: int(seq) + i + 1, CallID: fmt.Sprintf("%s/%d", tag, int(seq)+i), Attempt: 1}
	}
	return records(seq, bodies...)
}

// sampleEvents returns an event of every kind, with every field its kind
// uses set.
func sampleEvents(runID string) []polyloop.Event {
	bodies := sampleBodies(runID, 64)
	snap := sampleSnapshot(runID)
	intent := bodies[3].(*polyloop.ActionIntent)
	step := bodies[4].(*polyloop.StepCompleted)
	result := bodies[2].(*polyloop.ModelCallResult)
	finished := bodies[8].(*polyloop.RunFinished)
	base := func(kind polyloop.EventKind, seq int64) polyloop.Event {
		return polyloop.Event{V: polyloop.EventVersion, Kind: kind, RunID: runID, Agent: snap.Agent, Step: 1, Seq: seq,
			At: sampleTime.Add(time.Duration(seq) * time.Millisecond), CallID: "m1.1", Attempt: 1}
	}
	evs := []polyloop.Event{
		base(polyloop.EventRunStarted, 0), base(polyloop.EventRunResumed, 1), base(polyloop.EventStepStarted, 2),
		base(polyloop.EventModelCallStarted, 2), base(polyloop.EventModelCallFinished, 3), base(polyloop.EventModelCallFinished, 4),
		base(polyloop.EventActionStarted, 5), base(polyloop.EventActionFinished, 6), base(polyloop.EventStepCompleted, 6),
		base(polyloop.EventConfigOverridden, 7), base(polyloop.EventChildReceived, 8), base(polyloop.EventRunFinished, 9),
	}
	evs[0].Snapshot, evs[0].SnapshotHash = &snap, "sha256:abc"
	evs[1].Plan = &polyloop.ResumePlan{Action: polyloop.PlanReplayAction, Step: 1, Attempt: 2, ActionID: "a1", Tool: "search", Reason: "replay " + sampleText, LastSeq: 1}
	evs[4].Reply = result.Reply
	evs[5].Failure = bodies[7].(*polyloop.ModelCallResult).Failure
	evs[6].ActionID, evs[6].Action, evs[6].Replay = intent.ActionID, &intent.Action, intent.Replay
	evs[7].ActionID, evs[7].Action, evs[7].Replay = intent.ActionID, &intent.Action, intent.Replay
	evs[7].Outcome = &polyloop.ActionOutcome{Status: polyloop.NotExecuted, Observation: "executor text " + sampleText}
	evs[7].StepRecord, evs[8].StepRecord = step, step
	evs[9].Override = bodies[5].(*polyloop.ConfigOverride)
	evs[10].Reception = bodies[6].(*polyloop.ChildReception)
	evs[11].StopReason, evs[11].FinalAnswer, evs[11].Totals = finished.StopReason, finished.FinalAnswer, &finished.Totals
	return append(evs, moreSampleEvents(base, intent)...)
}

// moreSampleEvents are the events of batches, streaming, leases, gates
// and maintenance: an action settled by an action_result (no step record
// on its action_finished), a delta and a superseded candidate, a take-over,
// a gate requested and answered, a maintenance operation and its end.
func moreSampleEvents(base func(polyloop.EventKind, int64) polyloop.Event, intent *polyloop.ActionIntent) []polyloop.Event {
	evs := []polyloop.Event{
		base(polyloop.EventActionFinished, 10), base(polyloop.EventModelDelta, 11), base(polyloop.EventCandidateSuperseded, 11),
		base(polyloop.EventLeaseTakenOver, 12), base(polyloop.EventGateRequested, 13), base(polyloop.EventGateAnswered, 14),
		base(polyloop.EventMaintenanceOp, 15), base(polyloop.EventMaintenanceDone, 16),
	}
	first := intent.Action
	evs[0].ActionID, evs[0].Action, evs[0].Replay, evs[0].Index = "a1.1", &first, intent.Replay, 0
	evs[0].Outcome = &polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "first of two " + sampleText}
	evs[0].ActionResult = &polyloop.ActionResult{Step: 1, SettledAction: polyloop.SettledAction{ResultID: "a1.1", Attempt: 1,
		Outcome: &polyloop.StepOutcome{Status: polyloop.Executed}, Observation: "first of two " + sampleText}}
	evs[1].Delta = &polyloop.Delta{Attempt: 1, Text: "partial " + sampleText}
	evs[2].Delta = &polyloop.Delta{Attempt: 1, Superseded: true}
	evs[3].Takeover = &polyloop.LeaseTakeover{From: polyloop.LeaseOwner{Host: "old", PID: 1, Token: "t1", Since: sampleTime},
		To: polyloop.LeaseOwner{Host: "new", PID: 2, Token: "t2", Since: sampleTime}, Reason: polyloop.TakeoverForced}
	req := &polyloop.GateRequest{Step: 1, ActionID: "a1.2", Index: 1, Of: 2, Action: intent.Action}
	evs[4].Gate, evs[4].GateRequest = polyloop.KindApprovalRequested, req
	evs[5].Gate, evs[5].GateRequest = polyloop.KindApprovalRequested, req
	evs[5].Answer = &polyloop.ApprovalDecided{Step: 1, ActionID: "a1.2", Allow: false, By: "ana", Note: "no " + sampleText}
	evs[6].Operation = &polyloop.MaintenanceOp{Step: 1, Name: "memory.1", WriteID: "w1", Outcome: polyloop.OpDone, Value: []byte(`{"committed":1}`)}
	return evs
}
