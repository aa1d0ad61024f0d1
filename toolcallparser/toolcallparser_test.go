package toolcallparser_test

import (
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/parsertest"
	"github.com/polyloop/polyloop/toolcallparser"
)

func call(id, name, args string) polyloop.ToolCall {
	tc := polyloop.ToolCall{ID: id, Name: name}
	if args != "" {
		tc.Args = []byte(args)
	}
	return tc
}

func TestParseTable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		require  bool
		reply    polyloop.ModelReply
		want     polyloop.Decision // for act and final
		contains []string          // for invalid
	}{
		{name: "one call", reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("c1", "read", `{"path": "a.txt"}`)}},
			want: polyloop.ActOne(polyloop.Action{CallID: "c1", Tool: "read", Args: []byte(`{"path":"a.txt"}`)})},
		{name: "text beside the call is ignored", reply: polyloop.ModelReply{Text: "Let me read it.", ToolCalls: []polyloop.ToolCall{call("c1", "read", `{}`)}},
			want: polyloop.ActOne(polyloop.Action{CallID: "c1", Tool: "read", Args: []byte(`{}`)})},
		{name: "empty args are an empty object", reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("", "now", "")}},
			want: polyloop.ActOne(polyloop.Action{Tool: "now", Args: []byte(`{}`)})},
		{name: "whitespace args", reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("c", "now", " \n ")}},
			want: polyloop.ActOne(polyloop.Action{CallID: "c", Tool: "now", Args: []byte(`{}`)})},
		{name: "null args", reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("c", "now", "null")}},
			want: polyloop.ActOne(polyloop.Action{CallID: "c", Tool: "now", Args: []byte(`{}`)})},
		{name: "nested args compacted", reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("c", "w", "{\n \"a\": [1, {\"b\": \" x \"}]\n}")}},
			want: polyloop.ActOne(polyloop.Action{CallID: "c", Tool: "w", Args: []byte(`{"a":[1,{"b":" x "}]}`)})},
		{name: "no call is final", reply: polyloop.ModelReply{Text: "The answer is 4."}, want: polyloop.Final{Answer: "The answer is 4."}},
		{name: "empty reply is an empty final answer", reply: polyloop.ModelReply{}, want: polyloop.Final{Answer: ""}},
		{name: "no call with RequireAction", require: true, reply: polyloop.ModelReply{Text: "done"}, contains: []string{"no tool call"}},
		{name: "two calls", reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "a", "{}"), call("2", "b", "{}")}},
			contains: []string{"2 tool calls", `"a", "b"`, "exactly one tool per turn"}},
		{name: "many calls bounded", reply: polyloop.ModelReply{ToolCalls: manyCalls(20)},
			contains: []string{"20 tool calls", `"t", …)`}},
		{name: "several calls even with RequireAction", require: true, reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "a", "{}"), call("2", "a", "{}")}},
			contains: []string{"2 tool calls"}},
		{name: "no name", reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "", "{}")}}, contains: []string{"no tool name"}},
		{name: "malformed args", reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "read", `{"path": }`)}},
			contains: []string{`call to "read" are not valid JSON`, "at byte 10"}},
		{name: "truncated args", reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "read", `{"path": "a`)}},
			contains: []string{"unexpected end of JSON input", "at byte 11"}},
		{name: "two objects as args", reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "read", `{} {}`)}},
			contains: []string{"after top-level value", "at byte 4"}},
		{name: "array args", reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "read", `["a"]`)}},
			contains: []string{"must be a JSON object, not a JSON array"}},
		{name: "args as a string holding an object", reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "read", `"{\"path\": 1}"`)}},
			want: polyloop.ActOne(polyloop.Action{CallID: "1", Tool: "read", Args: []byte(`{"path":1}`)})},
		{name: "args as a string holding malformed json", reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "read", `"{\"path\": }"`)}},
			contains: []string{"are not valid JSON", "at byte 10"}},
		{name: "args as a string holding a string", reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "read", `"\"x\""`)}},
			contains: []string{"not a JSON string"}},
		{name: "args as a string holding prose", reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "read", `"path=x"`)}},
			contains: []string{"are not valid JSON", "invalid character 'p'"}},
		{name: "number args", reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "read", `-1`)}},
			contains: []string{"not a JSON number"}},
		{name: "invalid utf-8 args", reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "read", "{\"p\":\"\xff\"}")}},
			contains: []string{"not valid UTF-8"}},
		{name: "long name bounded", reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", strings.Repeat("é", 100), "[")}},
			contains: []string{`"` + strings.Repeat("é", 32) + `"…`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := toolcallparser.New(toolcallparser.Options{RequireAction: tt.require})
			d := parsertest.Parse(t, p, tt.reply, callAction)
			parsertest.Expect(t, d, tt.want, tt.contains)
		})
	}
}

func manyCalls(n int) []polyloop.ToolCall {
	out := make([]polyloop.ToolCall, n)
	for i := range out {
		out[i] = call("", "t", "{}")
	}
	return out
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		opts toolcallparser.Options
		want string
	}{
		{toolcallparser.Options{}, `{"version":1,"require_action":false}`},
		{toolcallparser.Options{RequireAction: true}, `{"version":1,"require_action":true}`},
	} {
		c := toolcallparser.New(tt.opts).Describe()
		if c.Name != "toolcallparser" || string(c.Config) != tt.want {
			t.Errorf("Describe(%+v) = %s %s, want toolcallparser %s", tt.opts, c.Name, c.Config, tt.want)
		}
	}
	var _ polyloop.Describer = toolcallparser.New(toolcallparser.Options{})
}
