package toolcallparser_test

import (
	"path/filepath"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/golden"
	"github.com/polyloop/polyloop/internal/parsertest"
	"github.com/polyloop/polyloop/toolcallparser"
)

// goldenCases are the replies whose decisions and feedback texts are pinned
// in testdata/decisions.golden. Each name is a section of that file.
var goldenCases = []struct {
	name  string
	opts  toolcallparser.Options
	reply polyloop.ModelReply
}{
	{"act", toolcallparser.Options{}, polyloop.ModelReply{Text: "Reading.", ToolCalls: []polyloop.ToolCall{call("call_1", "read_file", `{"path": "notes.txt"}`)}}},
	{"act_no_args", toolcallparser.Options{}, polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("call_2", "now", "")}}},
	{"final", toolcallparser.Options{}, polyloop.ModelReply{Text: "The file has 12 lines."}},
	{"no_call_required", toolcallparser.Options{RequireAction: true}, polyloop.ModelReply{Text: "The file has 12 lines."}},
	{"batch", toolcallparser.Options{}, polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "read_file", `{"path": "a"}`), call("2", "write_file", `{"path": "b"}`), call("3", "read_file", "")}}},
	{"over_limit", toolcallparser.Options{MaxActionsPerStep: 2}, polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "read_file", "{}"), call("2", "write_file", "{}"), call("3", "read_file", "{}")}}},
	{"bad_call_in_batch", toolcallparser.Options{}, polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "read_file", `{"path": "a"}`), call("2", "write_file", `{"path": "b",}`)}}},
	{"bad_calls_in_batch", toolcallparser.Options{}, polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "", "{}"), call("2", "read_file", "{}"), call("", "write_file", `["b"]`)}}},
	{"no_name", toolcallparser.Options{}, polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "", `{"path":"a"}`)}}},
	{"malformed_args", toolcallparser.Options{}, polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "read_file", `{"path": "a",}`)}}},
	{"malformed_args_kept_as_string", toolcallparser.Options{}, polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "read_file", `"{\"path\": \"a\",}"`)}}},
	{"truncated_args", toolcallparser.Options{}, polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "read_file", `{"path": "a`)}}},
	{"array_args", toolcallparser.Options{}, polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "read_file", `["a"]`)}}},
	{"args_schema_wrong_type", toolcallparser.Options{Tools: []polyloop.ToolSpec{weatherTool}}, polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "weather", `{"city": "Oslo", "days": "two"}`)}}},
	{"args_schema_missing", toolcallparser.Options{Tools: []polyloop.ToolSpec{weatherTool}}, polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "weather", `{"days": 2}`)}}},
	{"args_schema_unknown_field", toolcallparser.Options{Tools: []polyloop.ToolSpec{weatherTool}}, polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "weather", `{"city": "Oslo", "when": "now"}`)}}},
	{"non_utf8_args", toolcallparser.Options{}, polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "read_file", "{\"path\":\"\xc3\"}")}}},
}

func TestGolden(t *testing.T) {
	t.Parallel()
	var got []golden.Section
	for _, c := range goldenCases {
		p := toolcallparser.New(c.opts)
		d := parsertest.Parse(t, p, c.reply, callAction)
		got = append(got, golden.Section{Name: c.name, Data: render(t, p, c.reply, d)})
	}
	golden.Check(t, filepath.Join("testdata", "decisions.golden"), got)
}

// render prints a case as indented JSON: the parser, the reply, the
// decision.
func render(t *testing.T, p polyloop.Describer, reply polyloop.ModelReply, d polyloop.Decision) []byte {
	t.Helper()
	// Args are rendered as strings: a malformed one is not a JSON value.
	type renderedCall struct{ ID, Name, Args string }
	calls := []renderedCall{}
	for _, c := range reply.ToolCalls {
		calls = append(calls, renderedCall{c.ID, c.Name, string(c.Args)})
	}
	return golden.JSON(t, struct {
		Parser    polyloop.Component `json:"parser"`
		Text      string             `json:"text"`
		ToolCalls []renderedCall     `json:"tool_calls"`
		Kind      string             `json:"kind"`
		Decision  polyloop.Decision  `json:"decision"`
	}{p.Describe(), reply.Text, calls, string(d.Kind()), d})
}
