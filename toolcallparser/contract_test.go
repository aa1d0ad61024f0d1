package toolcallparser_test

import (
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/polylooptest"
	"github.com/polyloop/polyloop/toolcallparser"
)

// TestContract runs the DecisionParser contract kit on the default
// configuration and on one that requires one call per reply.
func TestContract(t *testing.T) {
	t.Parallel()
	corpus := []polylooptest.ParserCase{
		{Name: "one call", Reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("c1", "read", `{"path":"a"}`)}}, Want: polyloop.DecisionAct},
		{Name: "malformed args", Reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("c1", "a", `{`)}}, Want: polyloop.DecisionInvalid},
		{Name: "args matching the schema", Reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("c1", "weather", `{"city":"Oslo"}`)}}, Want: polyloop.DecisionAct},
		{Name: "args not matching the schema", Reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("c1", "weather", `{"city":1}`)}}, Want: polyloop.DecisionInvalid},
		{Name: "malformed args in a batch", Reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("c1", "a", `{}`), call("c2", "a", `{`)}}, Want: polyloop.DecisionInvalid},
	}
	for _, require := range []bool{false, true} {
		want, two := polyloop.DecisionFinal, polyloop.DecisionAct
		if require { // and at most one call per reply
			want, two = polyloop.DecisionInvalid, polyloop.DecisionInvalid
		}
		cases := append(corpus[:len(corpus):len(corpus)],
			polylooptest.ParserCase{Name: "text only", Reply: polyloop.ModelReply{Text: "4"}, Want: want},
			polylooptest.ParserCase{Name: "two calls", Reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("c1", "a", `{}`), call("c2", "b", `{}`)}}, Want: two})
		opts := toolcallparser.Options{RequireAction: require, Tools: []polyloop.ToolSpec{weatherTool}}
		if require {
			opts.MaxActionsPerStep = 1
		}
		t.Run(map[bool]string{false: "Default", true: "RequireActionOneCall"}[require], func(t *testing.T) {
			t.Parallel()
			polylooptest.TestDecisionParser(t, polylooptest.ParserHarness{
				New: func(testing.TB) polyloop.DecisionParser {
					return toolcallparser.New(opts)
				},
				Corpus: cases,
			})
		})
	}
}
