package jsonparser_test

import (
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/jsonparser"
	"github.com/polyloop/polyloop/polylooptest"
)

// TestContract runs the DecisionParser contract kit on a parser with tool
// schemas and ignored fields.
func TestContract(t *testing.T) {
	t.Parallel()
	text := func(s string) polyloop.ModelReply { return polyloop.ModelReply{Text: s} }
	polylooptest.TestDecisionParser(t, polylooptest.ParserHarness{
		New: func(testing.TB) polyloop.DecisionParser {
			return jsonparser.New(jsonparser.Options{Tools: []polyloop.ToolSpec{readTool}, Ignore: []string{"thought"}})
		},
		Corpus: []polylooptest.ParserCase{
			{Name: "action", Reply: text(`{"tool":"read","args":{"path":"a"}}`), Want: polyloop.DecisionAct},
			{Name: "fenced", Reply: text("```json\n{\"tool\":\"read\",\"args\":{}}\n```"), Want: polyloop.DecisionAct},
			{Name: "flattened", Reply: text(`{"tool":"read","path":"a"}`), Want: polyloop.DecisionAct},
			{Name: "final", Reply: text(`{"final":"done"}`), Want: polyloop.DecisionFinal},
			{Name: "no json", Reply: text("done"), Want: polyloop.DecisionInvalid},
			{Name: "malformed", Reply: text(`{"tool":"read",}`), Want: polyloop.DecisionInvalid},
			{Name: "several", Reply: text(`{"tool":"a"}{"tool":"b"}`), Want: polyloop.DecisionInvalid},
			{Name: "batch", Reply: text(`[{"tool":"read","path":"a"},{"tool":"read","args":{"path":"b"}}]`), Want: polyloop.DecisionAct},
			{Name: "batch with a bad action", Reply: text(`[{"tool":"read","path":"a"},{"tool":"read","args":[]}]`), Want: polyloop.DecisionInvalid},
		},
	})
}
