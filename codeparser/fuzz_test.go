package codeparser_test

import (
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/codeparser"
	"github.com/polyloop/polyloop/internal/parsertest"
)

// FuzzParse checks the DecisionParser contract on arbitrary text: no panic,
// exactly one decision, the same decision twice, Invalid with feedback. Its
// seeds run with every go test.
func FuzzParse(f *testing.F) {
	seeds := []string{
		"", "```", "```bash", "```bash\n", "```bash\nls\n```", "~~~bash\nls\n~~~~",
		"```bash\n```\n```bash\n```", "   ```bash\n x\n   ```", "```bash\r\nls\r\n```\r\n",
		"````\n```bash\nls\n```\n````", "FINAL ANSWER: x", "```bash\nls\n```\nFINAL ANSWER: y",
		"\xff```bash\n\xfe\n```", "```BASH\nx\n```", "``` bash ```",
	}
	for _, c := range goldenCases {
		seeds = append(seeds, c.text)
	}
	for _, s := range seeds {
		f.Add(s)
	}
	parsers := []*codeparser.Parser{
		codeparser.New(codeparser.Options{}),
		codeparser.New(codeparser.Options{FinalMarker: "FINAL ANSWER:", Tags: []string{"bash", "sh"}}),
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, p := range parsers {
			parsertest.Parse(t, p, polyloop.ModelReply{Text: text}, codeAction)
		}
	})
}
