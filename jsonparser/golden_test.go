package jsonparser_test

import (
	"path/filepath"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/golden"
	"github.com/polyloop/polyloop/internal/parsertest"
	"github.com/polyloop/polyloop/jsonparser"
)

var goldenTools = jsonparser.Options{Tools: []polyloop.ToolSpec{readTool}, Ignore: []string{"thought"}}

// goldenCases are the replies whose decisions and feedback texts are pinned
// in testdata/decisions.golden: one per accepted shape and one per failure
// kind. Each name is a section of that file.
var goldenCases = []struct {
	name string
	opts jsonparser.Options
	text string
}{
	{"act", goldenTools, `{"tool": "read", "args": {"path": "notes.txt"}}`},
	{"act_fenced", goldenTools, "I'll read the notes.\n```json\n{\"thought\": \"need the file\", \"tool\": \"read\", \"arguments\": {\"path\": \"notes.txt\"}}\n```"},
	{"act_flattened", goldenTools, `{"tool": "read", "path": "notes.txt", "lines": 10}`},
	{"final", goldenTools, `{"final": "The notes have 12 lines."}`},
	{"final_text", jsonparser.Options{TextIsFinal: true}, "The notes have 12 lines."},
	{"empty_reply", goldenTools, ""},
	{"no_json", goldenTools, "The notes have 12 lines."},
	{"malformed", goldenTools, "Reading now.\n{\"tool\": \"read\", \"args\": {\"path\": \"notes.txt\",}}"},
	{"malformed_truncated", goldenTools, "```json\n{\"tool\": \"read\", \"args\": {\"path\": \n```"},
	{"fence_unclosed", goldenTools, "```json\n{\"tool\": \"read\", \"args\": {}}\n"},
	{"fence_empty", goldenTools, "```json\n// read the notes\n```"},
	{"several", goldenTools, "{\"tool\": \"read\", \"args\": {\"path\": \"a\"}}\n{\"tool\": \"read\", \"args\": {\"path\": \"b\"}}"},
	{"batch", goldenTools, "Both files:\n```json\n[\n  {\"tool\": \"read\", \"args\": {\"path\": \"a\"}},\n  {\"thought\": \"then b\", \"tool\": \"read\", \"path\": \"b\"}\n]\n```"},
	{"batch_over_limit", jsonparser.Options{Tools: goldenTools.Tools, MaxActionsPerStep: 2}, `[{"tool": "read", "path": "a"}, {"tool": "read", "path": "b"}, {"tool": "read", "path": "c"}]`},
	{"batch_bad_actions", goldenTools, `[{"tool": "read", "path": "a"}, {"tool": "read", "file": "b"}, "read c", {"final": "done"}]`},
	{"batch_malformed", goldenTools, "[{\"tool\": \"read\", \"path\": \"a\"}\n {\"tool\": \"read\", \"path\": \"b\"}]"},
	{"duplicate_field", goldenTools, `{"tool": "read", "args": {}, "args": {"path": "a"}}`},
	{"missing_tool", goldenTools, `{"name": "read", "args": {"path": "a"}}`},
	{"bad_tool", goldenTools, `{"tool": ["read"]}`},
	{"tool_and_final", goldenTools, `{"tool": "read", "final": "done"}`},
	{"args_and_arguments", goldenTools, `{"tool": "read", "args": {}, "arguments": {}}`},
	{"args_not_object", goldenTools, `{"tool": "read", "args": "notes.txt"}`},
	{"unknown_fields", goldenTools, `{"tool": "read", "args": {"path": "a"}, "reason": "x"}`},
	{"unknown_final_fields", goldenTools, `{"final": "done", "confidence": 0.9}`},
	{"flattened_not_params", goldenTools, `{"tool": "read", "path": "a", "encoding": "utf-8"}`},
	{"args_schema_mismatch", goldenTools, `{"tool": "read", "args": {"path": "notes.txt", "lines": "ten"}}`},
	{"not_utf8", goldenTools, "{\"tool\": \"read\", \"args\": {\"path\": \"\xc3\"}}"},
}

func TestGolden(t *testing.T) {
	t.Parallel()
	var got []golden.Section
	for _, c := range goldenCases {
		p := jsonparser.New(c.opts)
		d := parsertest.Parse(t, p, polyloop.ModelReply{Text: c.text}, jsonAction)
		got = append(got, golden.Section{Name: c.name, Data: parsertest.Render(t, p, c.text, d)})
	}
	golden.Check(t, filepath.Join("testdata", "decisions.golden"), got)
}

// TestFailureTextsDistinct checks that every failure kind of the golden
// cases has its own feedback text.
func TestFailureTextsDistinct(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}
	for _, c := range goldenCases {
		inv, ok := jsonparser.New(c.opts).Parse(polyloop.ModelReply{Text: c.text}).(polyloop.Invalid)
		if !ok {
			continue
		}
		if other, dup := seen[inv.Feedback]; dup {
			t.Errorf("cases %q and %q give the same feedback %q", other, c.name, inv.Feedback)
		}
		seen[inv.Feedback] = c.name
	}
	if len(seen) < 15 {
		t.Errorf("only %d distinct failure texts in the golden cases", len(seen))
	}
}
