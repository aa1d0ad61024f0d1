package toolcallparser_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/polyloop/polyloop"
)

// checkedParse parses reply twice and checks the DecisionParser contract:
// exactly one of the three decision values, the same decision both times,
// Invalid with feedback, an Act whose Args are one JSON object sharing no
// memory with the reply, the reply unmodified.
func checkedParse(t *testing.T, p polyloop.DecisionParser, reply polyloop.ModelReply) polyloop.Decision {
	t.Helper()
	before := cloneReply(reply)
	d := p.Parse(reply)
	switch d := d.(type) {
	case polyloop.Act:
		checkAction(t, d.Action, reply)
	case polyloop.Final:
	case polyloop.Invalid:
		if d.Feedback == "" {
			t.Fatalf("Invalid with empty feedback for %#v", reply)
		}
	default:
		t.Fatalf("Parse returned %T, want Act, Final or Invalid", d)
	}
	if again := p.Parse(reply); !reflect.DeepEqual(d, again) {
		t.Fatalf("Parse is not deterministic: %#v then %#v", d, again)
	}
	if !reflect.DeepEqual(before, reply) {
		t.Fatalf("Parse modified the reply")
	}
	return d
}

func checkAction(t *testing.T, a polyloop.Action, reply polyloop.ModelReply) {
	t.Helper()
	var obj map[string]json.RawMessage
	if a.Tool == "" || json.Unmarshal(a.Args, &obj) != nil || obj == nil {
		t.Fatalf("action %#v: want a tool name and a JSON object as args", a)
	}
	if len(a.Args) > 0 && len(reply.ToolCalls) > 0 && len(reply.ToolCalls[0].Args) > 0 &&
		&a.Args[0] == &reply.ToolCalls[0].Args[0] {
		t.Fatalf("action args share memory with the reply")
	}
}

func cloneReply(r polyloop.ModelReply) polyloop.ModelReply {
	c := r
	c.ToolCalls = nil
	for _, tc := range r.ToolCalls {
		if tc.Args != nil {
			tc.Args = append(json.RawMessage{}, tc.Args...)
		}
		c.ToolCalls = append(c.ToolCalls, tc)
	}
	return c
}
