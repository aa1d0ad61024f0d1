package jsonparser_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/parsertest"
	"github.com/polyloop/polyloop/jsonparser"
)

var readTool = polyloop.ToolSpec{
	Name:       "read",
	Parameters: []byte(`{"type":"object","properties":{"path":{"type":"string"},"lines":{"type":"integer"}}}`),
}

func act(tool, args string) polyloop.Decision {
	return polyloop.ActOne(polyloop.Action{Tool: tool, Args: []byte(args)})
}

// batch is an Act of the actions given as tool, args, tool, args...
func batch(toolArgs ...string) polyloop.Decision {
	var a polyloop.Act
	for i := 0; i < len(toolArgs); i += 2 {
		a.Actions = append(a.Actions, polyloop.Action{Tool: toolArgs[i], Args: []byte(toolArgs[i+1])})
	}
	return a
}

func TestParseTable(t *testing.T) {
	t.Parallel()
	withTools := jsonparser.Options{Tools: []polyloop.ToolSpec{readTool, {Name: "free"}}}
	tests := []struct {
		name     string
		opts     jsonparser.Options
		text     string
		want     polyloop.Decision // for act and final
		contains []string          // for invalid
	}{
		{name: "action", text: `{"tool": "read", "args": {"path": "a.txt"}}`, want: act("read", `{"path":"a.txt"}`)},
		{name: "arguments alias", text: `{"tool":"read","arguments":{"path":"a"}}`, want: act("read", `{"path":"a"}`)},
		{name: "no args", text: `{"tool":"now"}`, want: act("now", `{}`)},
		{name: "null args", text: `{"tool":"now","args":null}`, want: act("now", `{}`)},
		{name: "prose around", text: "I will read it.\n{\"tool\":\"read\",\"args\":{\"path\":\"a\"}}\nThen decide.", want: act("read", `{"path":"a"}`)},
		{name: "json fence", text: "Reading:\n```json\n{\n  \"tool\": \"read\",\n  \"args\": {\"path\": \"a\"}\n}\n```", want: act("read", `{"path":"a"}`)},
		{name: "bare fence", text: "```\n{\"tool\":\"read\"}\n```", want: act("read", `{}`)},
		{name: "fence wins over prose json", text: "Example: {\"tool\":\"x\"}\n```json\n{\"tool\":\"read\"}\n```", want: act("read", `{}`)},
		{name: "other fences blanked", text: "```python\nd = {\"tool\": \"x\"}\n```\n{\"tool\":\"read\"}", want: act("read", `{}`)},
		{name: "braces inside strings", text: `{"tool":"echo","args":{"s":"} { \" ]"}}`, want: act("echo", `{"s":"} { \" ]"}`)},
		{name: "array of one", text: `[{"tool":"read"}]`, want: act("read", `{}`)},
		{name: "array of one final", text: `[{"final":"done"}]`, want: polyloop.Final{Answer: "done"}},
		{name: "array is a batch in order", text: `[{"tool":"b","args":{"x":1}}, {"tool":"a"}]`, want: batch("b", `{"x":1}`, "a", `{}`)},
		{name: "array in a fence with prose", text: "Two reads:\n```json\n[\n {\"tool\": \"read\", \"path\": \"a\"},\n {\"tool\": \"read\", \"args\": {\"path\": \"b\"}}\n]\n```", want: batch("read", `{"path":"a"}`, "read", `{"path":"b"}`)},
		{name: "array with ignored and flattened fields", opts: jsonparser.Options{Tools: []polyloop.ToolSpec{readTool}, Ignore: []string{"thought"}}, text: `[{"thought":"x","tool":"read","lines":2},{"tool":"free","y":1}]`, want: batch("read", `{"lines":2}`, "free", `{"y":1}`)},
		{name: "array up to the limit", opts: jsonparser.Options{MaxActionsPerStep: 2}, text: `[{"tool":"a"},{"tool":"b"}]`, want: batch("a", `{}`, "b", `{}`)},
		{name: "prose brackets ignored", text: "See [1] and [docs]. [] {\"tool\":\"read\"}", want: act("read", `{}`)},
		{name: "text is final with prose brackets", opts: jsonparser.Options{TextIsFinal: true}, text: "The list is [] or [1, 2].", want: polyloop.Final{Answer: "The list is [] or [1, 2]."}},
		{name: "nested array of actions", text: `[[{"tool":"a"}]]`, want: act("a", `{}`)},
		{name: "prose braces ignored beside an action", text: "Use {path} as needed. {\"tool\":\"read\"}", want: act("read", `{}`)},
		{name: "loose prose brace stepped over", text: "a { b\n{\"tool\":\"read\"}", want: act("read", `{}`)},
		{name: "flattened", text: `{"tool":"write","path":"a","data":[1, 2]}`, want: act("write", `{"path":"a","data":[1,2]}`)},
		{name: "flattened within schema", opts: withTools, text: `{"tool":"read","lines":3,"path":"a"}`, want: act("read", `{"lines":3,"path":"a"}`)},
		{name: "flattened for tool without schema", opts: withTools, text: `{"tool":"free","x":1}`, want: act("free", `{"x":1}`)},
		{name: "flattened for unlisted tool", opts: withTools, text: `{"tool":"other","x":1}`, want: act("other", `{"x":1}`)},
		{name: "ignored field", opts: jsonparser.Options{Ignore: []string{"thought"}}, text: `{"thought":"hm","tool":"read","args":{}}`, want: act("read", `{}`)},
		{name: "ignored field not flattened", opts: jsonparser.Options{Ignore: []string{"thought"}}, text: `{"thought":"hm","tool":"read","path":"a"}`, want: act("read", `{"path":"a"}`)},
		{name: "final", text: `{"final": "12 lines"}`, want: polyloop.Final{Answer: "12 lines"}},
		{name: "final number", text: `{"final": 12.50}`, want: polyloop.Final{Answer: "12.50"}},
		{name: "final object", text: "```json\n{\"final\": {\"a\": [1, 2]}}\n```", want: polyloop.Final{Answer: `{"a":[1,2]}`}},
		{name: "text is final", opts: jsonparser.Options{TextIsFinal: true}, text: "It has 12 lines.", want: polyloop.Final{Answer: "It has 12 lines."}},
		{name: "text is final with prose braces", opts: jsonparser.Options{TextIsFinal: true}, text: "Use {x}.", want: polyloop.Final{Answer: "Use {x}."}},

		{name: "args checked against the schema", opts: withTools, text: `{"tool":"read","args":{"path":1}}`, contains: []string{`The field "path" of your call to "read" must be a string, not a number.`}},
		{name: "flattened args checked against the schema", opts: withTools, text: `{"tool":"read","path":"a","lines":"ten"}`, contains: []string{`The field "lines" of your call to "read" must be an integer, not a string.`}},
		{name: "args checked in a batch", opts: withTools, text: `[{"tool":"read","path":"a"},{"tool":"read","path":["b"]}]`, contains: []string{`Action 2: The field "path" of your call to "read" must be a string, not an array.`}},
		{name: "args check off", opts: jsonparser.Options{Tools: withTools.Tools, SkipArgCheck: true}, text: `{"tool":"read","args":{"path":1}}`, want: act("read", `{"path":1}`)},
		{name: "empty", text: " \n", contains: []string{"Your reply is empty."}},
		{name: "no json", text: "I think it has 12 lines.", contains: []string{"contains no JSON object"}},
		{name: "no json with only a bash fence", text: "```bash\nls\n```", contains: []string{"contains no JSON object"}},
		{name: "malformed", text: "{\"tool\": \"read\",\n \"args\": {\"path\": \"a\",}}", contains: []string{"malformed at line 2, column 23", "looking for beginning of object key string"}},
		{name: "truncated", text: `{"tool":"read","args":{"path":`, contains: []string{"malformed at line 1, column 30", "unexpected end of JSON input"}},
		{name: "malformed in fence counts reply lines", text: "Go:\n```json\n{\"tool\": \"é\", x}\n```", contains: []string{"malformed at line 3, column 15"}},
		{name: "unquoted keys", text: `{tool: "read"}`, contains: []string{"malformed at line 1, column 2", "invalid character 't'"}},
		{name: "text is final still reports json-like malformed", opts: jsonparser.Options{TextIsFinal: true}, text: `{"tool": }`, contains: []string{"malformed"}},
		{name: "unclosed fence", text: "Here:\n```json\n{\"tool\":\"read\"}\n", contains: []string{"opened at line 2", "never closed", "cannot be unwrapped"}},
		{name: "empty json fence", text: "```json\n\n```", contains: []string{"fence opened at line 1", "holds no JSON object"}},
		{name: "two objects", text: `{"tool":"a"} {"tool":"b"}`, contains: []string{"contains 2 separate JSON actions", "several actions as one JSON array"}},
		{name: "two fences", text: "```json\n{\"tool\":\"a\"}\n```\n```json\n{\"tool\":\"b\"}\n```", contains: []string{"contains 2 separate JSON actions"}},
		{name: "valid and malformed", text: `{"tool":"a"} {"tool":"b",}`, contains: []string{"contains 2 separate JSON actions"}},
		{name: "an array and an object", text: `[{"tool":"a"}] {"tool":"b"}`, contains: []string{"contains 2 separate JSON actions"}},
		{name: "two arrays", text: `[{"tool":"a"}] [{"tool":"b"}]`, contains: []string{"contains 2 separate JSON actions"}},
		{name: "array over the limit", opts: jsonparser.Options{MaxActionsPerStep: 2}, text: `[{"tool":"a"},{"tool":"b"},{"tool":"c"}]`, contains: []string{"holds 3 actions", "none of them was run", "at most 2 actions per turn"}},
		{name: "array over a limit of one", opts: jsonparser.Options{MaxActionsPerStep: 1}, text: `[{"tool":"a"},{"tool":"b"}]`, contains: []string{"at most 1 action per turn"}},
		{name: "bad action in an array", text: `[{"tool":"a"},{"tool":"b","args":"x"}]`, contains: []string{"None of the 2 actions of your JSON array was run: 1 of them is invalid.", `Action 2: The "args" field must be a JSON object`, "Send the array again, corrected."}},
		{name: "every bad action named", text: `[{"tool":""},{"tool":"b"},{"name":"c"}]`, contains: []string{"2 of them are invalid", `Action 1: The "tool" field`, `Action 3: The JSON object in your reply has no "tool" field`}},
		{name: "final among actions", text: `[{"tool":"a"},{"final":"done"}]`, contains: []string{"Action 2: This is a final answer, which cannot share an array with actions"}},
		{name: "not an object in an array", text: `[{"tool":"a"}, "b", 3]`, contains: []string{`Action 2: This is a JSON string, not an action object.`, "Action 3: This is a JSON number"}},
		{name: "duplicate field in an array", text: `[{"tool":"a"},{"tool":"b","tool":"c"}]`, contains: []string{`Action 2: The JSON object in your reply has the field "tool" twice`}},
		{name: "malformed array", text: "[{\"tool\":\"a\"}\n {\"tool\":\"b\"}]", contains: []string{"malformed at line 2, column 2", "after array element"}},
		{name: "truncated array", text: `[{"tool":"a"},{"tool":`, contains: []string{"malformed at line 1", "unexpected end of JSON input"}},
		{name: "missing tool", text: `{"args":{"path":"a"}}`, contains: []string{`no "tool" field`, `its fields: "args"`}},
		{name: "empty object", text: `{}`, contains: []string{`no "tool" field`, "it has no fields"}},
		{name: "name is not tool", text: `{"name":"read","arguments":{}}`, contains: []string{`no "tool" field`, `"name", "arguments"`}},
		{name: "tool not a string", text: `{"tool":3}`, contains: []string{"not a JSON number"}},
		{name: "tool empty", text: `{"tool":""}`, contains: []string{"not an empty string"}},
		{name: "duplicate", text: `{"tool":"a","tool":"b"}`, contains: []string{`field "tool" twice`}},
		{name: "tool and final", text: `{"tool":"a","final":"b"}`, contains: []string{`both "tool" and "final"`}},
		{name: "args and arguments", text: `{"tool":"a","args":{},"arguments":{}}`, contains: []string{`both "args" and "arguments"`}},
		{name: "args not object", text: `{"tool":"a","args":"path=x"}`, contains: []string{`"args" field must be a JSON object`, "not a JSON string"}},
		{name: "arguments not object", text: `{"tool":"a","arguments":[1]}`, contains: []string{`"arguments" field`, "not a JSON array"}},
		{name: "unknown fields beside args", text: `{"tool":"a","args":{},"reason":"x","b":1}`, contains: []string{`unknown fields "reason", "b"`, `inside "args"`}},
		{name: "unknown fields beside final", text: `{"final":"x","args":{},"why":1}`, contains: []string{`unknown fields "args", "why"`}},
		{name: "flattened not params", opts: withTools, text: `{"tool":"read","path":"a","mode":"r"}`, contains: []string{`field "mode" of your call to "read" is not a parameter`, `its parameters: "lines", "path"`}},
		{name: "invalid utf-8", text: "{\"tool\":\"a\",\"args\":{\"s\":\"\xff\"}}", contains: []string{"not valid UTF-8"}},
		{name: "long names bounded", text: `{"tool":"a","args":{},"` + strings.Repeat("k", 200) + `":1}`, contains: []string{`"` + strings.Repeat("k", 64) + `"…`}},
		{name: "many names bounded", text: `{"args":{},"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"i":1,"j":1,"k":1}`, contains: []string{`"i", and 2 more`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := parsertest.Parse(t, jsonparser.New(tt.opts), polyloop.ModelReply{Text: tt.text}, jsonAction)
			parsertest.Expect(t, d, tt.want, tt.contains)
		})
	}
}

// TestManyLooseBraces checks that a reply of many unbalanced prose braces
// or brackets is read (the scan stays linear) and gives a decision.
func TestManyLooseBraces(t *testing.T) {
	t.Parallel()
	for _, loose := range []string{"{ ", "[{ ", "[ "} {
		text := strings.Repeat(loose, 200000) + `{"tool":"read"}`
		d := parsertest.Parse(t, jsonparser.New(jsonparser.Options{}), polyloop.ModelReply{Text: text}, jsonAction)
		if _, ok := d.(polyloop.Invalid); !ok {
			t.Fatalf("%q: Parse = %#v, want Invalid (the braces hide the action)", loose, d)
		}
	}
}

// readSchemas is the hash of readTool's schema as Describe documents it:
// sha256 of [{"name":"read","schema":<the compacted schema>}].
var readSchemas = func() string {
	sum := sha256.Sum256([]byte(`[{"name":"read","schema":` + string(readTool.Parameters) + `}]`))
	return "sha256:" + hex.EncodeToString(sum[:])
}()

func TestDescribe(t *testing.T) {
	t.Parallel()
	tests := []struct {
		opts jsonparser.Options
		want string
	}{
		{jsonparser.Options{}, `{"version":2,"text_is_final":false}`},
		{jsonparser.Options{MaxActionsPerStep: 4}, `{"version":2,"text_is_final":false,"max_actions_per_step":4}`},
		{jsonparser.Options{
			Tools:       []polyloop.ToolSpec{readTool, {Name: "free"}, {Name: "bad", Parameters: []byte(`[`)}},
			Ignore:      []string{"thought", "tool", "reasoning"},
			TextIsFinal: true,
		}, `{"version":2,"tool_params":{"read":["lines","path"]},"ignore":["reasoning","thought"],"text_is_final":true,"arg_check":{"tools":["read"],"schemas":"` + readSchemas + `"}}`},
		{jsonparser.Options{Tools: []polyloop.ToolSpec{readTool}, SkipArgCheck: true}, `{"version":2,"tool_params":{"read":["lines","path"]},"text_is_final":false}`},
	}
	for _, tt := range tests {
		c := jsonparser.New(tt.opts).Describe()
		if c.Name != "jsonparser" || string(c.Config) != tt.want {
			t.Errorf("Describe = %s %s, want jsonparser %s", c.Name, c.Config, tt.want)
		}
	}
	var _ polyloop.Describer = jsonparser.New(jsonparser.Options{})
}
