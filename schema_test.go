package polyloop_test

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/diag"
)

func logSchema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	data, err := os.ReadFile("docs/log-format.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func validateLine(rs *jsonschema.Resolved, line []byte) error {
	var v any
	if err := json.Unmarshal(line, &v); err != nil {
		return err
	}
	return rs.Validate(v)
}

// The JSON Schema of docs/log-format.md describes what the library writes:
// every record of the reference run, and one record of each other kind.
func TestLogSchema(t *testing.T) {
	rs := logSchema(t)
	data, _ := os.ReadFile("testdata/reference.jsonl")
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if err := validateLine(rs, []byte(line)); err != nil {
			t.Fatalf("reference line %d: %v", i+1, err)
		}
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	extra := []polyloop.RecordBody{
		&polyloop.ModelCallResult{Step: 2, CallID: "m2.1", Failure: diag.From(errors.Join(errors.New("a"), errors.New("b")))},
		&polyloop.ConfigOverride{PreviousHash: "sha256:a", SnapshotHash: "sha256:b", Fields: []string{"system"}},
		&polyloop.ChildReception{Step: 1, Index: 1, ChildRunID: "p/1.1", StopReason: polyloop.StopMaxSteps, Handler: "failed",
			Reception: polyloop.ReceptionHandled, Value: json.RawMessage(`"fallback"`)},
		&polyloop.RunFinished{StopReason: polyloop.StopEnvError, Sinks: []polyloop.SinkReport{{Index: 0, Sink: "x", Errors: 3, Disabled: true}}},
		&polyloop.LeaseTakeover{From: polyloop.LeaseOwner{Host: "a", PID: 1, Token: "t1", Since: at}, To: polyloop.LeaseOwner{Host: "b", PID: 2, Token: "t2", Since: at}, Reason: polyloop.TakeoverHolderDead},
		&polyloop.ModelCallIntent{Step: 2, CallID: "m2.1", Attempt: 1, View: &polyloop.ViewRef{Name: "notes", Version: 3}},
		&polyloop.ChildReception{Step: 1, Index: 0, Key: "proposal.1", ChildRunID: "p/1~:proposal.1", StopReason: polyloop.StopCompleted,
			Handler: "succeeded", Reception: polyloop.ReceptionHandled, Value: json.RawMessage(`{}`), Maintenance: true},
		&polyloop.MaintenanceOp{Step: 1, Name: "memory.1", WriteID: "p/1~memory.1", Outcome: polyloop.OpReceived,
			Value: json.RawMessage(`{"conflict":true}`), Failure: diag.From(errors.New("stale"))},
		&polyloop.MaintenanceOp{Step: 1, Name: "context.1", Outcome: polyloop.OpDone, Value: json.RawMessage(`{"view":0}`)},
		&polyloop.MaintenanceDone{Step: 1},
		// Alone, an intent that refers to a tool call keeps its action (v 1).
		&polyloop.ActionIntent{Step: 1, ActionID: "a1", Attempt: 2, ModelCallID: "m1.1", Replay: polyloop.ReplaySafe, ToolCall: 1,
			Action: polyloop.Action{CallID: "c1", Tool: "echo", Args: json.RawMessage(`{}`)}},
		&polyloop.ApprovalRequested{GateRequest: polyloop.GateRequest{Step: 1, ActionID: "a1.2", Index: 1, Of: 2,
			Action: polyloop.Action{CallID: "c2", Tool: "send", Args: json.RawMessage(`{"to":"x"}`)}, Deadline: &at}},
		&polyloop.ApprovalDecided{Step: 1, ActionID: "a1.2", Allow: false, By: "ana", Note: "no", Timeout: true, Clock: &at},
		&polyloop.DeliveryRequested{GateRequest: polyloop.GateRequest{Step: 1, ActionID: "a1", Action: polyloop.Action{Tool: "book"}}},
		&polyloop.DeliveryReceived{Step: 1, ActionID: "a1", Outcome: polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "booked", Done: true}, By: "hook"},
		&polyloop.ActionResult{Step: 1, SettledAction: polyloop.SettledAction{ResultID: "a1.1", Attempt: 2,
			Outcome: &polyloop.StepOutcome{Status: polyloop.NotExecuted}, Observation: "denied", Synthetic: true, Audit: "a person said no"}},
		&polyloop.RunStarted{RunID: "f", Snapshot: polyloop.Snapshot{Agent: "a"}, SnapshotHash: "sha256:" + strings.Repeat("0", 64), LibraryVersion: "x",
			LogVersion: "1.1", ForkedFrom: &polyloop.RunSource{RunID: "src", SnapshotHash: "sha256:y", Fields: []string{"system"}, AtStep: 3, Copied: 11}},
		&polyloop.RunStarted{RunID: "r", Snapshot: polyloop.Snapshot{Agent: "a"}, SnapshotHash: "sha256:" + strings.Repeat("1", 64), LibraryVersion: "x",
			ReplayOf: &polyloop.RunSource{RunID: "src", SnapshotHash: "sha256:y"}},
		// Time limits (1.3).
		&polyloop.RunStarted{RunID: "t", Snapshot: polyloop.Snapshot{Agent: "a", Limits: polyloop.Limits{MaxSteps: 3, TimeLimit: time.Hour, WorkingLimit: time.Minute}},
			SnapshotHash: "sha256:" + strings.Repeat("2", 64), LibraryVersion: "x", LogVersion: "1.3"},
		&polyloop.RunFinished{StopReason: polyloop.StopTimeLimit},
		&polyloop.RunFinished{StopReason: polyloop.StopWorkingLimit},
		&polyloop.ActionIntent{Step: 1, ActionID: "a1", Attempt: 2, ModelCallID: "m1.1", Replay: polyloop.ReplayIdempotent,
			Action: polyloop.Action{CallID: "c1", Tool: "pay", Args: json.RawMessage(`{}`)}, IdempotencyKey: polyloop.IdempotencyKeyFor("r", "a1", 1)},
		&polyloop.ActionReconciled{Step: 1, ActionID: "a1", Attempt: 1, Key: "plk_00000000000000000000000000000000", Verdict: polyloop.VerdictCompleted,
			Status: polyloop.Executed, Said: "charge ch_1", Resolution: polyloop.ResolutionAdopted},
		&polyloop.ActionReconciled{Step: 1, ActionID: "a1", Attempt: 1, Key: "k", Verdict: polyloop.VerdictNotHappened, Resolution: polyloop.ResolutionRerun},
		&polyloop.RunFinished{StopReason: polyloop.StopCompleted, Totals: polyloop.Totals{Steps: 1, Reconciled: polyloop.ReconciledCounts{Adopted: 1}}},
	}
	for _, b := range extra {
		line, err := polyloop.Record{Seq: 5, At: at, Body: b}.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if err := validateLine(rs, line); err != nil {
			t.Fatalf("%s: %v\n%s", b.Kind(), err, line)
		}
	}
	// The schema rejects what the format forbids.
	for _, bad := range []string{
		`{"at":"x","kind":"model_call_intent","v":1,"step":1,"call_id":"m1.1","attempt":1}`,
		`{"seq":1,"at":"x","kind":"model_call_intent","v":2,"step":1,"call_id":"m1.1","attempt":1}`,
		`{"seq":1,"at":"x","kind":"model_call_result","v":1,"step":1,"call_id":"m1.1","reply":{},"failure":{"type":"t","message":"m"}}`,
		`{"seq":1,"at":"x","kind":"step_completed","v":1,"step":1,"model_call_id":"m1.1","decision":"act","result_id":"a1"}`,
		`{"seq":1,"at":"x","kind":"run_finished","v":1,"stop_reason":"gave_up","totals":{"steps":0,"model_calls":0,"actions":0,"input_tokens":0,"output_tokens":0,"cost_usd":0}}`,
		`{"seq":1,"at":"x","kind":"lease_takeover","v":1,"from":{"host":"a","pid":1,"token":"t","since":"x"},"to":{"host":"b","pid":2,"token":"u","since":"x"},"reason":"stolen"}`,
		`{"seq":1,"at":"x","kind":"maintenance_op","v":1,"step":1,"name":"memory.1","outcome":"maybe","value":1}`,
		`{"seq":1,"at":"x","kind":"maintenance_op","v":1,"step":1,"outcome":"done","value":1}`,
		`{"seq":1,"at":"x","kind":"maintenance_done","v":1}`,
		`{"seq":1,"at":"x","kind":"approval_decided","v":1,"step":1}`,
		`{"seq":1,"at":"x","kind":"delivery_received","v":1,"step":1,"action_id":"a1","outcome":{"status":"maybe"}}`,
		`{"seq":1,"at":"x","kind":"approval_requested","v":1,"step":1,"action":{}}`,
		`{"seq":1,"at":"x","kind":"action_intent","v":1,"step":1,"action_id":"a1","attempt":1,"model_call_id":"m1.1","replay":"replay_safe"}`,
		`{"seq":1,"at":"x","kind":"action_intent","v":2,"step":1,"action_id":"a1","attempt":1,"model_call_id":"m1.1","action":{"tool":"t"},"replay":"replay_safe","tool_call":1}`,
		`{"seq":1,"at":"x","kind":"action_intent","v":1,"step":1,"action_id":"a1","attempt":1,"model_call_id":"m1.1","replay":"replay_safe","tool_call":1}`,
		`{"seq":1,"at":"x","kind":"action_intent","v":2,"step":1,"action_id":"a1","attempt":1,"model_call_id":"m1.1","action":{"tool":"t"},"replay":"replay_safe"}`,
		`{"seq":1,"at":"x","kind":"step_completed","v":2,"step":1,"model_call_id":"m1.1","decision":"final"}`,
		`{"seq":1,"at":"x","kind":"action_intent","v":1,"step":1,"action_id":"a1","attempt":1,"model_call_id":"m1.1","replay":"replay_safe","tool_call":0}`,
		`{"seq":1,"at":"x","kind":"model_call_intent","v":1,"step":1,"call_id":"m1.1","attempt":1,"view":{"name":"v","version":-1}}`,
		`{"seq":1,"at":"x","kind":"action_reconciled","v":1,"step":1,"action_id":"a1","attempt":1,"idempotency_key":"k","verdict":"completed","resolution":"adopted"}`,
		`{"seq":1,"at":"x","kind":"action_reconciled","v":1,"step":1,"action_id":"a1","attempt":1,"idempotency_key":"k","verdict":"unknown","resolution":"rerun"}`,
	} {
		if validateLine(rs, []byte(bad)) == nil {
			t.Errorf("schema accepted %s", bad)
		}
	}
}
