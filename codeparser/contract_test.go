package codeparser_test

import (
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/codeparser"
	"github.com/polyloop/polyloop/polylooptest"
)

// TestContract runs the DecisionParser contract kit on the parser with a
// final marker.
func TestContract(t *testing.T) {
	t.Parallel()
	polylooptest.TestDecisionParser(t, polylooptest.ParserHarness{
		New: func(testing.TB) polyloop.DecisionParser {
			return codeparser.New(codeparser.Options{FinalMarker: "FINAL ANSWER:"})
		},
		Corpus: []polylooptest.ParserCase{
			{Name: "one block", Reply: polyloop.ModelReply{Text: "```bash\nls\n```"}, Want: polyloop.DecisionAct},
			{Name: "two blocks", Reply: polyloop.ModelReply{Text: "```bash\nls\n```\n```bash\npwd\n```"}, Want: polyloop.DecisionInvalid},
			{Name: "no block", Reply: polyloop.ModelReply{Text: "hello"}, Want: polyloop.DecisionInvalid},
			{Name: "unclosed", Reply: polyloop.ModelReply{Text: "```bash\nls"}, Want: polyloop.DecisionInvalid},
			{Name: "final", Reply: polyloop.ModelReply{Text: "FINAL ANSWER: 4"}, Want: polyloop.DecisionFinal},
		},
	})
}
