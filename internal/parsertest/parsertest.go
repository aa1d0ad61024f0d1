// Package parsertest holds the test helpers the parser packages
// (codeparser, jsonparser, toolcallparser) share: a Parse checked against
// the DecisionParser contract at every call, the expectation of a table
// test, and the golden rendering of a decision.
package parsertest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/golden"
)

// ActionCheck says what a package's actions must hold: a is action i of an
// Act parsed from reply. It returns nil for a good action.
type ActionCheck func(a polyloop.Action, i int, reply polyloop.ModelReply) error

// Parse parses reply twice with p and checks the DecisionParser contract:
// exactly one of the three decision values, the same decision both times,
// an Invalid with feedback, an Act with at least one action, the reply
// unmodified. Every action of an Act must pass checkAction. It returns the
// decision.
func Parse(t testing.TB, p polyloop.DecisionParser, reply polyloop.ModelReply, checkAction ActionCheck) polyloop.Decision {
	t.Helper()
	before := reply.Clone()
	d := p.Parse(reply)
	switch d := d.(type) {
	case polyloop.Act:
		if len(d.Actions) == 0 {
			t.Fatalf("Act without actions for %s", describe(reply))
		}
		for i, a := range d.Actions {
			if err := checkAction(a, i, reply); err != nil {
				t.Fatalf("action %d of %d %#v: %v", i, len(d.Actions), a, err)
			}
		}
	case polyloop.Final:
	case polyloop.Invalid:
		if d.Feedback == "" {
			t.Fatalf("Invalid with empty feedback for %s", describe(reply))
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

// ToolAction checks an action of a parser of tool calls: a tool name and
// arguments that are one JSON object.
func ToolAction(a polyloop.Action) error {
	var obj map[string]json.RawMessage
	if a.Tool == "" || json.Unmarshal(a.Args, &obj) != nil || obj == nil {
		return fmt.Errorf("want a tool name and a JSON object as args")
	}
	return nil
}

func describe(reply polyloop.ModelReply) string {
	if len(reply.ToolCalls) == 0 {
		return fmt.Sprintf("%q", reply.Text)
	}
	return fmt.Sprintf("%#v", reply)
}

// Expect checks a decision against a table test's expectation: with want
// nil, an Invalid whose feedback holds every string of contains; otherwise
// a decision equal to want, actions compared with Action.Equal.
func Expect(t testing.TB, d, want polyloop.Decision, contains []string) {
	t.Helper()
	if want == nil {
		inv, ok := d.(polyloop.Invalid)
		if !ok {
			t.Fatalf("Parse = %#v, want Invalid", d)
		}
		for _, s := range contains {
			if !strings.Contains(inv.Feedback, s) {
				t.Errorf("feedback %q does not contain %q", inv.Feedback, s)
			}
		}
		return
	}
	if !sameDecision(d, want) {
		t.Fatalf("Parse = %#v (%s), want %#v", d, argsOf(d), want)
	}
}

func argsOf(d polyloop.Decision) string {
	a, ok := d.(polyloop.Act)
	if !ok {
		return ""
	}
	args := make([]string, len(a.Actions))
	for i, x := range a.Actions {
		args[i] = string(x.Args)
	}
	return strings.Join(args, "\n")
}

func sameDecision(a, b polyloop.Decision) bool {
	if aa, ok := a.(polyloop.Act); ok {
		ba, ok := b.(polyloop.Act)
		return ok && slices.EqualFunc(aa.Actions, ba.Actions, polyloop.Action.Equal)
	}
	return a == b
}

// Render is the golden section of a parse of a text reply: the parser, the
// reply's text, the decision's kind and the decision.
func Render(t testing.TB, p polyloop.Describer, text string, d polyloop.Decision) []byte {
	t.Helper()
	return golden.JSON(t, struct {
		Parser   polyloop.Component `json:"parser"`
		Text     string             `json:"text"`
		Kind     string             `json:"kind"`
		Decision polyloop.Decision  `json:"decision"`
	}{p.Describe(), text, string(d.Kind()), d})
}
