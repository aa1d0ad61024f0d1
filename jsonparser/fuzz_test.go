package jsonparser_test

import (
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/parsertest"
	"github.com/polyloop/polyloop/jsonparser"
)

// FuzzParse checks the DecisionParser contract on arbitrary text: no panic,
// exactly one decision, the same decision twice, Invalid with feedback, Act
// with a tool and object arguments. Its seeds run with every go test.
func FuzzParse(f *testing.F) {
	seeds := []string{
		"", "{", "}", "{}", "[]", "[{}]", `{"tool":"a"}`, `{"tool":"a","args":{}}`, `{"final":"x"}`,
		`{"final":null}`, `{"tool":"a","x":{"y":[1,{"z":"}"}]}}`, `{"tool":"a\u0000"}`, `{"tool":"a","args":{"s":"\ud800"}}`,
		"```json\n{}\n```", "```json\n{", "```\n[1]\n```", "~~~json\n{\"tool\":\"a\"}\n~~~", "{\"a\":\"\\", `{"a":1e999}`,
		"{ { { {\"tool\":\"a\"}", "\xff{\"tool\":\"\xfe\"}", `[{"tool":"a"},{"tool":"b"}]`, `{"tool":"a"}{"tool":"b"}`,
		`[{"tool":"a"},{"final":"x"},3]`, `[{"tool":"a"} {"tool":"b"}]`, `[[{"tool":"a"}]]`, "see [1] [] [{x}] {\"tool\":\"a\"}", `[{"tool":"a"},`,
	}
	for _, c := range goldenCases {
		seeds = append(seeds, c.text)
	}
	for _, s := range seeds {
		f.Add(s)
	}
	parsers := []*jsonparser.Parser{
		jsonparser.New(jsonparser.Options{}),
		jsonparser.New(jsonparser.Options{Tools: []polyloop.ToolSpec{readTool}, Ignore: []string{"thought"}, TextIsFinal: true, MaxActionsPerStep: 2}),
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, p := range parsers {
			parsertest.Parse(t, p, polyloop.ModelReply{Text: text}, jsonAction)
		}
	})
}
