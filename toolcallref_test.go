package polyloop_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/polyloop/polyloop"
)

// The log keeps an action intent whose action is a tool call as a
// reference to it; ResolveToolCall, record by record, gives back the
// records the runner wrote, and the fold reads the log as written.
func TestToolCallReferenceResolves(t *testing.T) {
	written := referenceLog(t)
	stored := readJSONL(t, "testdata/reference.jsonl")
	refs := 0
	var resolved []polyloop.Record
	for _, r := range stored.Records {
		if in, ok := r.Body.(*polyloop.ActionIntent); ok && in.ToolCall > 0 {
			refs++
			if in.Action.Tool != "" || in.Action.Args != nil {
				t.Fatalf("intent %s keeps its action %+v beside tool call %d", in.ActionID, in.Action, in.ToolCall)
			}
		}
		resolved = append(resolved, polyloop.ResolveToolCall(resolved, r))
	}
	if refs == 0 {
		t.Fatal("the reference log has no intent referring to its tool call")
	}
	for i, r := range resolved {
		if !reflect.DeepEqual(r.Body, written.Records[i].Body) {
			t.Fatalf("record %d resolves to %+v, the runner wrote %+v", i, r.Body, written.Records[i].Body)
		}
	}
	if !reflect.DeepEqual(polyloop.History(stored), polyloop.History(written)) {
		t.Fatal("the history of the stored log differs from the written one's")
	}
}

// A reference to a tool call the model result does not have, or beside an
// action that is not that call, is a corrupt log.
func TestToolCallReferenceCorrupt(t *testing.T) {
	for name, change := range map[string]func(in *polyloop.ActionIntent){
		"beyond the reply":   func(in *polyloop.ActionIntent) { in.ToolCall = 9 },
		"another action":     func(in *polyloop.ActionIntent) { in.Action = polyloop.Action{CallID: "x", Tool: "echo"} },
		"another model call": func(in *polyloop.ActionIntent) { in.ModelCallID = "m9.1" },
	} {
		log := readJSONL(t, "testdata/reference.jsonl")
		for i, r := range log.Records {
			if in, ok := r.Body.(*polyloop.ActionIntent); ok && in.ToolCall > 0 {
				c := *in
				change(&c)
				log.Records[i].Body = &c
				break
			}
		}
		if _, err := polyloop.PlanResume(log); !errors.Is(err, polyloop.ErrCorruptLog) {
			t.Errorf("%s: plan says %v, want a corrupt log", name, err)
		}
	}
}
