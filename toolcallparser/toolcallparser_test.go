package toolcallparser_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
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
		max      int
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
		{name: "two calls are a batch in the reply's order", reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "b", `{"x": 1}`), call("2", "a", "")}},
			want: polyloop.Act{Actions: []polyloop.Action{{CallID: "1", Tool: "b", Args: []byte(`{"x":1}`)}, {CallID: "2", Tool: "a", Args: []byte(`{}`)}}}},
		{name: "five calls", reply: polyloop.ModelReply{ToolCalls: manyCalls(5)}, want: polyloop.Act{Actions: manyActions(5)}},
		{name: "calls up to the limit", max: 3, reply: polyloop.ModelReply{ToolCalls: manyCalls(3)}, want: polyloop.Act{Actions: manyActions(3)}},
		{name: "over the limit", max: 2, reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "a", "{}"), call("2", "b", "{}"), call("3", "a", "{}")}},
			contains: []string{"3 tool calls", `"a", "b", "a"`, "at most 2 tools per turn", "none of them was run"}},
		{name: "over a limit of one", max: 1, reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "a", "{}"), call("2", "b", "{}")}},
			contains: []string{"2 tool calls", "at most 1 tool per turn"}},
		{name: "over the limit, names bounded", max: 4, reply: polyloop.ModelReply{ToolCalls: manyCalls(20)},
			contains: []string{"20 tool calls", `"t", …)`, "at most 4 tools"}},
		{name: "over the limit even with RequireAction", require: true, max: 1, reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("1", "a", "{}"), call("2", "a", "{}")}},
			contains: []string{"2 tool calls"}},
		{name: "one bad call among several", reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("c1", "read", "{}"), call("c2", "read", `{"path": }`), call("c3", "write", "{}")}},
			contains: []string{"None of the 3 tool calls of your reply was run: 1 of them is invalid.", `Call 2 (id "c2"): The arguments of your call to "read" are not valid JSON`, "Send all 3 calls again, corrected."}},
		{name: "every bad call is named", reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{call("c1", "", "{}"), call("c2", "read", "{}"), call("", "write", "[1]")}},
			contains: []string{"2 of them are invalid", `Call 1 (id "c1"): Your tool call has no tool name.`, `Call 3: The arguments of your call to "write" must be a JSON object`}},
		{name: "bad calls listed up to a bound", reply: polyloop.ModelReply{ToolCalls: manyBadCalls(12)},
			contains: []string{"12 of them are invalid", `Call 8 (id "c8")`, "… and 4 more invalid calls."}},
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
			p := toolcallparser.New(toolcallparser.Options{RequireAction: tt.require, MaxActionsPerStep: tt.max})
			d := parsertest.Parse(t, p, tt.reply, callAction)
			parsertest.Expect(t, d, tt.want, tt.contains)
		})
	}
}

var weatherTool = polyloop.ToolSpec{Name: "weather", Parameters: []byte(
	`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"],"additionalProperties":false}`)}

// TestArgCheck checks the arguments of calls to tools given in Options.Tools
// against their schemas.
func TestArgCheck(t *testing.T) {
	t.Parallel()
	on := toolcallparser.Options{Tools: []polyloop.ToolSpec{weatherTool, {Name: "free"}}}
	off := on
	off.SkipArgCheck = true
	tests := []struct {
		name     string
		opts     toolcallparser.Options
		calls    []polyloop.ToolCall
		want     polyloop.Decision
		contains []string
	}{
		{name: "matching", opts: on, calls: []polyloop.ToolCall{call("1", "weather", `{"city":"Oslo","days":2}`)},
			want: polyloop.ActOne(polyloop.Action{CallID: "1", Tool: "weather", Args: []byte(`{"city":"Oslo","days":2}`)})},
		{name: "wrong type", opts: on, calls: []polyloop.ToolCall{call("1", "weather", `{"city":"Oslo","days":"two"}`)},
			contains: []string{`The field "days" of your call to "weather" must be an integer, not a string.`}},
		{name: "missing field", opts: on, calls: []polyloop.ToolCall{call("1", "weather", `{}`)},
			contains: []string{`lack the required field "city" (a string)`}},
		{name: "no args for a tool with a required field", opts: on, calls: []polyloop.ToolCall{call("1", "weather", ``)},
			contains: []string{`lack the required field "city"`}},
		{name: "unknown field", opts: on, calls: []polyloop.ToolCall{call("1", "weather", `{"city":"a","town":"b"}`)},
			contains: []string{`"town"`, `is not a parameter of that tool (its parameters: "city", "days")`}},
		{name: "a tool without a schema is not checked", opts: on, calls: []polyloop.ToolCall{call("1", "free", `{"x":1}`)},
			want: polyloop.ActOne(polyloop.Action{CallID: "1", Tool: "free", Args: []byte(`{"x":1}`)})},
		{name: "an unlisted tool is not checked", opts: on, calls: []polyloop.ToolCall{call("1", "other", `{"x":1}`)},
			want: polyloop.ActOne(polyloop.Action{CallID: "1", Tool: "other", Args: []byte(`{"x":1}`)})},
		{name: "a mismatch in a batch", opts: on, calls: []polyloop.ToolCall{call("1", "weather", `{"city":"a"}`), call("2", "weather", `{"city":3}`)},
			contains: []string{"None of the 2 tool calls of your reply was run: 1 of them is invalid.", `Call 2 (id "2"): The field "city" of your call to "weather" must be a string, not a number.`}},
		{name: "check off", opts: off, calls: []polyloop.ToolCall{call("1", "weather", `{"days":"two"}`)},
			want: polyloop.ActOne(polyloop.Action{CallID: "1", Tool: "weather", Args: []byte(`{"days":"two"}`)})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := parsertest.Parse(t, toolcallparser.New(tt.opts), polyloop.ModelReply{ToolCalls: tt.calls}, callAction)
			parsertest.Expect(t, d, tt.want, tt.contains)
		})
	}
}

func manyCalls(n int) []polyloop.ToolCall {
	out := make([]polyloop.ToolCall, n)
	for i := range out {
		out[i] = call(fmt.Sprintf("c%d", i+1), "t", "{}")
	}
	return out
}

func manyActions(n int) []polyloop.Action {
	out := make([]polyloop.Action, n)
	for i := range out {
		out[i] = polyloop.Action{CallID: fmt.Sprintf("c%d", i+1), Tool: "t", Args: []byte(`{}`)}
	}
	return out
}

func manyBadCalls(n int) []polyloop.ToolCall {
	out := manyCalls(n)
	for i := range out {
		out[i].Args = []byte("[")
	}
	return out
}

// schemasHash is the hash of the tools' schemas, computed here the way
// Describe documents it: SHA-256 of the JSON array of {name, schema}
// (compacted), sorted by name.
func schemasHash(t *testing.T, tools ...polyloop.ToolSpec) string {
	t.Helper()
	type entry struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
	}
	var entries []entry
	for _, tool := range tools {
		var buf bytes.Buffer
		if err := json.Compact(&buf, tool.Parameters); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, entry{tool.Name, buf.Bytes()})
	}
	raw, err := json.Marshal(entries)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		opts toolcallparser.Options
		want string
	}{
		{toolcallparser.Options{}, `{"version":2,"require_action":false}`},
		{toolcallparser.Options{RequireAction: true}, `{"version":2,"require_action":true}`},
		{toolcallparser.Options{MaxActionsPerStep: 3}, `{"version":2,"require_action":false,"max_actions_per_step":3}`},
		{toolcallparser.Options{MaxActionsPerStep: -1}, `{"version":2,"require_action":false}`},
		{toolcallparser.Options{Tools: []polyloop.ToolSpec{{Name: "free"}}}, `{"version":2,"require_action":false}`},
		{toolcallparser.Options{Tools: []polyloop.ToolSpec{weatherTool}, SkipArgCheck: true}, `{"version":2,"require_action":false}`},
		{toolcallparser.Options{Tools: []polyloop.ToolSpec{weatherTool, {Name: "free"}}},
			`{"version":2,"require_action":false,"arg_check":{"tools":["weather"],"schemas":"sha256:` + schemasHash(t, weatherTool) + `"}}`},
	} {
		c := toolcallparser.New(tt.opts).Describe()
		if c.Name != "toolcallparser" || string(c.Config) != tt.want {
			t.Errorf("Describe(%+v) = %s %s, want toolcallparser %s", tt.opts, c.Name, c.Config, tt.want)
		}
	}
	var _ polyloop.Describer = toolcallparser.New(toolcallparser.Options{})
}
