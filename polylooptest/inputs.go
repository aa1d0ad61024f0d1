package polylooptest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/polyloop/polyloop"
)

func text(name, s string) ParserCase {
	return ParserCase{Name: name, Reply: polyloop.ModelReply{Text: s}}
}

func calls(name, text string, tcs ...polyloop.ToolCall) ParserCase {
	return ParserCase{Name: name, Reply: polyloop.ModelReply{Text: text, ToolCalls: tcs}}
}

func call(id, name, args string) polyloop.ToolCall {
	tc := polyloop.ToolCall{ID: id, Name: name}
	if args != "" {
		tc.Args = json.RawMessage(args)
	}
	return tc
}

// edgeCases are small inputs that trip parsers up.
func edgeCases() []ParserCase {
	return []ParserCase{
		text("empty", ""),
		text("blank", " \n\t "),
		text("plain text", "Hello."),
		text("lone fence", "```"),
		text("unclosed fence", "```bash\nls -la"),
		text("empty fence", "```bash\n```"),
		text("two fences", "```bash\nls\n```\n```bash\npwd\n```"),
		text("nested fence", "````\n```json\n{}\n```\n````"),
		text("json action", `{"tool":"search","args":{"q":"x"}}`),
		text("json flattened", `{"tool":"search","q":"x"}`),
		text("json in fence", "```json\n{\"tool\":\"search\",\"args\":{}}\n```"),
		text("json truncated", `{"tool":"search","args":{"q":`),
		text("json array", `[{"tool":"a"},{"tool":"b"}]`),
		text("json scalars", `null`),
		text("json huge number", `{"tool":"x","args":{"n":1e999}}`),
		text("json nul escape", `{"tool":"x\u0000","args":{"s":"\u0000\ud800"}}`),
		text("final marker", "Final answer: 42"),
		calls("tool call no name", "", call("c1", "", `{}`)),
		calls("tool call null args", "", call("c1", "search", `null`)),
		calls("tool call no args", "", call("c1", "search", "")),
		calls("tool call args not json", "", call("c1", "search", `{bad`)),
		calls("tool call args string", "", call("c1", "search", `"q=x"`)),
		calls("tool call args array", "", call("c1", "search", `[1,2]`)),
		calls("tool call no id", "", call("", "search", `{"q":"x"}`)),
		calls("two tool calls", "", call("c1", "a", `{}`), call("c2", "b", `{}`)),
		calls("two tool calls, the second's args not json", "", call("c1", "a", `{}`), call("c2", "b", `{bad`)),
		calls("two tool calls, the second without a name", "", call("c1", "a", `{}`), call("c2", "", `{}`)),
		calls("five tool calls", "", call("c1", "a", `{"i":1}`), call("c2", "b", `{"i":2}`), call("c3", "a", `{"i":3}`),
			call("c4", "c", ""), call("c5", "b", `null`)),
		calls("two tool calls with one id", "", call("c1", "a", `{}`), call("c1", "a", `{}`)),
		calls("tool call and text", "Let me search.", call("c1", "search", `{"q":"x"}`)),
		calls("tool call and fence", "```bash\nls\n```", call("c1", "search", `{}`)),
		{Name: "empty tool call slice", Reply: polyloop.ModelReply{ToolCalls: []polyloop.ToolCall{}}},
		{Name: "metadata only", Reply: polyloop.ModelReply{Model: "m", FinishReason: "length", Attempts: 2}},
	}
}

// invalidUTF8 are inputs with byte sequences that are not UTF-8.
func invalidUTF8() []ParserCase {
	bad := []string{"\xff\xfe", "\xe4\xb8", "\xed\xa0\x80", "\xc0\xaf", "a\x80b"}
	var out []ParserCase
	for i, b := range bad {
		out = append(out,
			text(fmt.Sprintf("utf8 text %d", i), "answer "+b),
			text(fmt.Sprintf("utf8 fence %d", i), "```bash\necho "+b+"\n```"),
			text(fmt.Sprintf("utf8 json %d", i), `{"tool":"t`+b+`","args":{"q":"`+b+`"}}`),
			calls(fmt.Sprintf("utf8 tool name %d", i), "", call("c"+b, "search"+b, `{}`)),
			calls(fmt.Sprintf("utf8 tool args %d", i), b, call("c1", "search", `{"q":"`+b+`"}`)),
		)
	}
	return out
}

// hugeInputs are megabyte inputs and deep nestings.
func hugeInputs() []ParserCase {
	const mb = 1 << 20
	big := strings.Repeat("a", mb)
	manyCalls := make([]polyloop.ToolCall, 10000)
	for i := range manyCalls {
		manyCalls[i] = call(fmt.Sprintf("c%d", i), "search", `{"q":"x"}`)
	}
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	return []ParserCase{
		text("1MB text", big),
		text("1MB of braces", strings.Repeat("{", mb)),
		text("1MB of fences", strings.Repeat("```bash\n", mb/8)),
		text("1MB fenced code", "```bash\necho "+big+"\n```"),
		text("1MB json action", `{"tool":"search","args":{"q":"`+big+`"}}`),
		text("deep json text", `{"tool":"x","args":`+deep+`}`),
		calls("1MB tool args", "", call("c1", "search", `{"q":"`+big+`"}`)),
		calls("1MB tool name", "", call("c1", big, `{}`)),
		calls("deep tool args", "", call("c1", "search", deep)),
		calls("10000 tool calls", "", manyCalls...),
	}
}

// garbageTokens are the pieces token soups are made of.
var garbageTokens = []string{
	"{", "}", "[", "]", `"`, ":", ",", "```", "```bash", "```json", "```python", "\n", " ", "\\",
	`"tool"`, `"args"`, `"name"`, `"arguments"`, `"code"`, `"final"`, `"answer"`, "null", "true",
	"1e999", "-0", "\\u0000", "\\ud800", "\x00", "\xff", "é", "🙂", "Final Answer:", "Action:", "<tool_call>",
	"</tool_call>", "search", "bash", "ls -la",
}

// generated returns h.Generated inputs made from h.Seed: random bytes,
// token soups, random tool calls and mutations of the corpus and the edge
// cases.
func generated(h ParserHarness) []ParserCase {
	n, seed := h.Generated, h.Seed
	if n <= 0 {
		n = DefaultGenerated
	}
	if seed == 0 {
		seed = 1
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	seeds := append(append([]ParserCase{}, h.Corpus...), edgeCases()...)
	out := make([]ParserCase, n)
	for i := range out {
		name := fmt.Sprintf("generated seed=%d #%d", seed, i)
		switch i % 4 {
		case 0:
			out[i] = text(name, randomBytes(rng))
		case 1:
			out[i] = text(name, tokenSoup(rng))
		case 2:
			tcs := []polyloop.ToolCall{randomCall(rng), randomCall(rng)}
			out[i] = calls(name, tokenSoup(rng), tcs[:rng.IntN(3)]...)
		default:
			out[i] = mutate(rng, seeds[rng.IntN(len(seeds))], name)
		}
	}
	return out
}

func randomBytes(rng *rand.Rand) string {
	b := make([]byte, rng.IntN(200))
	for i := range b {
		b[i] = byte(rng.UintN(256))
	}
	return string(b)
}

func tokenSoup(rng *rand.Rand) string {
	var sb strings.Builder
	for range rng.IntN(40) {
		sb.WriteString(garbageTokens[rng.IntN(len(garbageTokens))])
	}
	return sb.String()
}

func randomCall(rng *rand.Rand) polyloop.ToolCall {
	return polyloop.ToolCall{
		ID:   tokenSoup(rng),
		Name: garbageTokens[rng.IntN(len(garbageTokens))],
		Args: json.RawMessage(tokenSoup(rng)),
	}
}

// mutate damages a copy of c: cuts its text, flips bytes, splices tokens in,
// and mangles one tool call's arguments.
func mutate(rng *rand.Rand, c ParserCase, name string) ParserCase {
	r := c.Reply.Clone()
	r.Text = mutateString(rng, r.Text)
	if len(r.ToolCalls) > 0 {
		i := rng.IntN(len(r.ToolCalls))
		r.ToolCalls[i].Args = json.RawMessage(mutateString(rng, string(r.ToolCalls[i].Args)))
	}
	return ParserCase{Name: name + " from " + c.Name, Reply: r}
}

func mutateString(rng *rand.Rand, s string) string {
	b := []byte(s)
	switch rng.IntN(4) {
	case 0:
		if len(b) > 0 {
			b = b[:rng.IntN(len(b))]
		}
	case 1:
		for range 1 + rng.IntN(4) {
			if len(b) > 0 {
				b[rng.IntN(len(b))] = byte(rng.UintN(256))
			}
		}
	case 2:
		at := 0
		if len(b) > 0 {
			at = rng.IntN(len(b))
		}
		tok := garbageTokens[rng.IntN(len(garbageTokens))]
		b = append(b[:at:at], append([]byte(tok), b[at:]...)...)
	default:
		b = append(b, b...)
	}
	return string(b)
}
