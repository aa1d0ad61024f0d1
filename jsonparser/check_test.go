package jsonparser_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/polyloop/polyloop"
)

// checkedParse parses reply twice and checks the DecisionParser contract:
// exactly one of the three decision values, the same decision both times,
// Invalid with feedback, an Act with a tool and object arguments, the reply
// unmodified.
func checkedParse(t *testing.T, p polyloop.DecisionParser, reply polyloop.ModelReply) polyloop.Decision {
	t.Helper()
	before := reply
	d := p.Parse(reply)
	switch d := d.(type) {
	case polyloop.Act:
		var obj map[string]json.RawMessage
		a := d.Action
		if a.Tool == "" || a.CallID != "" || a.Code != "" || json.Unmarshal(a.Args, &obj) != nil || obj == nil {
			t.Fatalf("action %#v: want a tool, object args, no call id, no code", a)
		}
	case polyloop.Final:
	case polyloop.Invalid:
		if d.Feedback == "" {
			t.Fatalf("Invalid with empty feedback for %q", reply.Text)
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
