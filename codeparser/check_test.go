package codeparser_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/polyloop/polyloop"
)

// checkedParse parses reply twice and checks the DecisionParser contract:
// exactly one of the three decision values, the same decision both times,
// Invalid with feedback, the reply unmodified.
func checkedParse(t *testing.T, p polyloop.DecisionParser, reply polyloop.ModelReply) polyloop.Decision {
	t.Helper()
	before := cloneReply(reply)
	d := p.Parse(reply)
	switch d := d.(type) {
	case polyloop.Act:
		if d.Action.Tool != "" || d.Action.Code == "" || d.Action.Lang == "" {
			t.Fatalf("code action %#v: want empty tool, code and lang", d.Action)
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

func cloneReply(r polyloop.ModelReply) polyloop.ModelReply {
	c := r
	c.ToolCalls = nil
	for _, tc := range r.ToolCalls {
		tc.Args = append(json.RawMessage(nil), tc.Args...)
		c.ToolCalls = append(c.ToolCalls, tc)
	}
	return c
}

func mustUnmarshal(raw []byte, v any) {
	if err := json.Unmarshal(raw, v); err != nil {
		panic(err)
	}
}
