package toolcallparser_test

import (
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/parsertest"
	"github.com/polyloop/polyloop/toolcallparser"
)

// FuzzParse checks the DecisionParser contract on arbitrary replies: no
// panic, exactly one decision, the same decision twice, Invalid with
// feedback, Act with one action per tool call and object arguments. Its
// seeds run with every go test.
func FuzzParse(f *testing.F) {
	seeds := []struct {
		text, name, args string
		calls            uint8
	}{
		{"", "", "", 0}, {"answer", "", "", 0}, {"", "read", `{"a":1}`, 1}, {"", "read", "", 1},
		{"", "read", "null", 1}, {"", "", "{}", 1}, {"", "x", "{", 1}, {"", "x", "[]", 1},
		{"", "x", "{}{}", 1}, {"", "x", "\xff", 1}, {"", "x", `{"a":"\ud800"}`, 1}, {"", "x", "{}", 2}, {"", "x", "{}", 255},
		{"", "weather", `{"city":"a"}`, 1}, {"", "weather", `{"city":1,"days":1.5}`, 3}, {"", "weather", `{"x":[{}]}`, 2},
	}
	for _, s := range seeds {
		f.Add(s.text, s.name, s.args, s.calls)
	}
	parsers := []*toolcallparser.Parser{
		toolcallparser.New(toolcallparser.Options{}),
		toolcallparser.New(toolcallparser.Options{RequireAction: true, MaxActionsPerStep: 2, Tools: []polyloop.ToolSpec{weatherTool}}),
	}
	f.Fuzz(func(t *testing.T, text, name, args string, calls uint8) {
		reply := polyloop.ModelReply{Text: text}
		for i := range int(calls % 6) {
			// Every other call is well formed, so that a bad call sits
			// among good ones.
			tc := polyloop.ToolCall{ID: string(rune('a' + i)), Name: name, Args: []byte(args)}
			if i%2 == 1 {
				tc.Name, tc.Args = "ok", []byte(`{"i":1}`)
			}
			reply.ToolCalls = append(reply.ToolCalls, tc)
		}
		for _, p := range parsers {
			if act, ok := parsertest.Parse(t, p, reply, callAction).(polyloop.Act); ok && len(act.Actions) != len(reply.ToolCalls) {
				t.Fatalf("Act of %d actions for %d tool calls", len(act.Actions), len(reply.ToolCalls))
			}
		}
	})
}
