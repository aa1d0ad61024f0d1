package view_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/view"
)

// A reconciled action is marked on its run's page: the verdict, what the
// run did, what the world said, the key.
func TestReconciledActionMarked(t *testing.T) {
	t.Parallel()
	s, st := newServer(t, view.Options{})
	snap := polyloop.Snapshot{Agent: "payer", Task: polyloop.Task{Input: "pay"},
		Tools: []polyloop.ToolSpec{{Name: "pay", Replay: polyloop.NeverReplay}}}
	hash, err := snap.Hash()
	if err != nil {
		t.Fatal(err)
	}
	key := polyloop.IdempotencyKeyFor("rec-1", "a1", 1)
	action := polyloop.Action{CallID: "c1", Tool: "pay", Args: json.RawMessage(`{"cents":1}`)}
	recs := []polyloop.RecordBody{
		&polyloop.RunStarted{RunID: "rec-1", Snapshot: snap, SnapshotHash: hash, LibraryVersion: "x", LogVersion: "1.3"},
		&polyloop.ModelCallIntent{Step: 1, CallID: "m1.1", Attempt: 1},
		&polyloop.ModelCallResult{Step: 1, CallID: "m1.1", Attempt: 1, Reply: &polyloop.ModelReply{
			ToolCalls: []polyloop.ToolCall{{ID: "c1", Name: "pay", Args: action.Args}}, Usage: polyloop.Usage{InputTokens: 1, OutputTokens: 1}}},
		&polyloop.ActionIntent{Step: 1, ActionID: "a1", Attempt: 1, ModelCallID: "m1.1", Action: action, Replay: polyloop.NeverReplay, IdempotencyKey: key},
		&polyloop.ActionReconciled{Step: 1, ActionID: "a1", Attempt: 1, Key: key, Verdict: polyloop.VerdictCompleted,
			Status: polyloop.Executed, Said: "charge ch_9 found", Resolution: polyloop.ResolutionAdopted},
		&polyloop.StepCompleted{Step: 1, ModelCallID: "m1.1", Decision: polyloop.DecisionAct, SettledAction: polyloop.SettledAction{
			ResultID: "a1", Attempt: 1, Outcome: &polyloop.StepOutcome{Status: polyloop.Executed}, Observation: "charged ch_9"}},
	}
	records := make([]polyloop.Record, len(recs))
	for i, b := range recs {
		records[i] = polyloop.Record{Seq: int64(i), Body: b}
	}
	if err := polyloop.AppendRecords(context.Background(), st, "rec-1", records...); err != nil {
		t.Fatal(err)
	}
	body := mustGet(t, s, "/run?id=rec-1")
	contains(t, "reconciled run", body, `<span class="badge reconciled" title="idempotency key `+key+`">reconciled: completed → adopted</span>`,
		"the world said: charge ch_9 found", "charged ch_9")
}
