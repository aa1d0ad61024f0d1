package polyloop

import (
	"encoding/json"
	"testing"
	"time"
)

// toolCallLog is a run's log up to an intent that leaves out its action,
// tool call 1 of the model result before it.
func toolCallLog() RunLog {
	at := time.Unix(0, 0).UTC()
	bodies := []RecordBody{
		&RunStarted{RunID: "r", Snapshot: Snapshot{Agent: "a", Tools: []ToolSpec{{Name: "echo", Replay: ReplaySafe}}}, SnapshotHash: "sha256:x", LogVersion: logVersionString},
		&ModelCallIntent{Step: 1, CallID: "m1.1", Attempt: 1},
		&ModelCallResult{Step: 1, CallID: "m1.1", Reply: &ModelReply{ToolCalls: []ToolCall{{ID: "c1", Name: "echo", Args: json.RawMessage(`{"text":"hi"}`)}}}},
		&ActionIntent{Step: 1, ActionID: "a1", Attempt: 1, ModelCallID: "m1.1", Replay: ReplaySafe, ToolCall: 1},
	}
	log := RunLog{RunID: "r"}
	for i, b := range bodies {
		log.Records = append(log.Records, Record{Seq: int64(i), At: at, Body: b})
	}
	return log
}

// A restored action has arguments of its own: changing them leaves the
// reply's tool call as it is, whether the reader (resolveToolCall) or the fold restored
// it.
func TestRestoredActionOwnsItsArgs(t *testing.T) {
	log := toolCallLog()
	args := log.Records[2].Body.(*ModelCallResult).Reply.ToolCalls[0].Args
	r := resolveToolCall(log.Records[:3], log.Records[3])
	st, err := foldLog(log)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.batch) != 1 || st.batch[0].intent == nil {
		t.Fatalf("the fold holds batch %+v", st.batch)
	}
	for name, a := range map[string]Action{"resolveToolCall": r.Body.(*ActionIntent).Action, "the fold": st.batch[0].intent.Action} {
		if string(a.Args) != `{"text":"hi"}` {
			t.Fatalf("%s restores args %s", name, a.Args)
		}
		a.Args[2] = 'X'
		if string(args) != `{"text":"hi"}` {
			t.Fatalf("changing the args that %s restores changed the reply's tool call to %s", name, args)
		}
	}
}
