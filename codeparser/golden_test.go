package codeparser_test

import (
	"path/filepath"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/codeparser"
	"github.com/polyloop/polyloop/internal/golden"
	"github.com/polyloop/polyloop/internal/parsertest"
)

// goldenCases are the replies whose decisions and feedback texts are pinned
// in testdata/decisions.golden. Each name is a section of that file.
var goldenCases = []struct {
	name string
	opts codeparser.Options
	text string
}{
	{"act", codeparser.Options{}, "I'll list the files.\n```bash\nls -la /tmp\n```\n"},
	{"act_python", codeparser.Options{Lang: "python", Tags: []string{"python", "py"}}, "```py\nprint('hi')\n```"},
	{"none_empty_reply", codeparser.Options{}, ""},
	{"none_prose", codeparser.Options{}, "The answer is 4."},
	{"none_other_langs", codeparser.Options{}, "```python\n1\n```\n```\n2\n```\n```sh\n3\n```"},
	{"none_many_other_langs", codeparser.Options{}, "```a\n```\n```b\n```\n```c\n```\n```d\n```\n```e\n```\n```f\n```\n```g\n```"},
	{"none_with_marker", codeparser.Options{FinalMarker: "FINAL ANSWER:"}, "I am done."},
	{"several", codeparser.Options{}, "```bash\nls\n```\nthen\n```bash\npwd\n```\n```bash\nid\n```"},
	{"unclosed", codeparser.Options{}, "Run this:\n\n```bash\nls\n"},
	{"empty_block", codeparser.Options{}, "```bash\n\n```"},
	{"final", codeparser.Options{FinalMarker: "FINAL ANSWER:"}, "All checks pass.\nFINAL ANSWER: the file has 12 lines\n"},
	{"final_and_code", codeparser.Options{FinalMarker: "FINAL ANSWER:"}, "```bash\nwc -l f\n```\nFINAL ANSWER: 12"},
}

func TestGolden(t *testing.T) {
	t.Parallel()
	path := filepath.Join("testdata", "decisions.golden")
	var got []golden.Section
	for _, c := range goldenCases {
		p := codeparser.New(c.opts)
		d := parsertest.Parse(t, p, polyloop.ModelReply{Text: c.text}, codeAction)
		got = append(got, golden.Section{Name: c.name, Data: parsertest.Render(t, p, c.text, d)})
	}
	golden.Check(t, path, got)
}
