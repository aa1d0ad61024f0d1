package toolcallparser_test

import (
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/polylooptest"
	"github.com/polyloop/polyloop/toolcallparser"
)

// TestContract runs the DecisionParser contract kit on both configurations.
func TestContract(t *testing.T) {
	t.Parallel()
	corpus := []polylooptest.ParserCase{
		{Name: "one call", Reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("c1", "read", `{"path":"a"}`)}}, Want: polyloop.DecisionAct},
		{Name: "two calls", Reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("c1", "a", `{}`), call("c2", "b", `{}`)}}, Want: polyloop.DecisionInvalid},
		{Name: "malformed args", Reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("c1", "a", `{`)}}, Want: polyloop.DecisionInvalid},
	}
	for _, require := range []bool{false, true} {
		want := polyloop.DecisionFinal
		if require {
			want = polyloop.DecisionInvalid
		}
		cases := append(corpus[:len(corpus):len(corpus)], polylooptest.ParserCase{Name: "text only", Reply: polyloop.ModelReply{Text: "4"}, Want: want})
		t.Run(map[bool]string{false: "Default", true: "RequireAction"}[require], func(t *testing.T) {
			t.Parallel()
			polylooptest.TestDecisionParser(t, polylooptest.ParserHarness{
				New: func(testing.TB) polyloop.DecisionParser {
					return toolcallparser.New(toolcallparser.Options{RequireAction: require})
				},
				Corpus: cases,
			})
		})
	}
}
