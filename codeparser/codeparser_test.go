package codeparser_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/codeparser"
	"github.com/polyloop/polyloop/internal/parsertest"
)

func TestParseTable(t *testing.T) {
	t.Parallel()
	marker := codeparser.New(codeparser.Options{FinalMarker: "FINAL ANSWER:"})
	shells := codeparser.New(codeparser.Options{Tags: []string{"bash", "SH", " shell "}})
	python := codeparser.New(codeparser.Options{Lang: "python"})
	tests := []struct {
		name     string
		parser   *codeparser.Parser
		text     string
		kind     polyloop.DecisionKind
		code     string   // for act
		answer   string   // for final
		contains []string // for invalid feedback
	}{
		{name: "one block", text: "Let me look.\n```bash\nls -la\n```\n", kind: polyloop.DecisionAct, code: "ls -la"},
		{name: "multi-line block keeps inner lines", text: "```bash\ncd /tmp\n\necho \"a b\"\n```", kind: polyloop.DecisionAct, code: "cd /tmp\n\necho \"a b\""},
		{name: "tag is case-insensitive with extra info", text: "```Bash title=run\necho hi\n```", kind: polyloop.DecisionAct, code: "echo hi"},
		{name: "tilde fence", text: "~~~bash\necho ~\n~~~", kind: polyloop.DecisionAct, code: "echo ~"},
		{name: "longer closing fence", text: "```bash\necho\n`````", kind: polyloop.DecisionAct, code: "echo"},
		{name: "indented fence dedents content", text: "  ```bash\n  echo a\n    echo b\n  ```", kind: polyloop.DecisionAct, code: "echo a\n  echo b"},
		{name: "crlf line endings", text: "```bash\r\necho a\r\n```\r\n", kind: polyloop.DecisionAct, code: "echo a"},
		{name: "inner shorter fence is content", text: "````bash\ncat <<EOF\n```\nEOF\n````", kind: polyloop.DecisionAct, code: "cat <<EOF\n```\nEOF"},
		{name: "other language ignored beside bash", text: "```python\nprint(1)\n```\n```bash\necho 1\n```", kind: polyloop.DecisionAct, code: "echo 1"},
		{name: "empty reply", text: "", kind: polyloop.DecisionInvalid, contains: []string{"no ```bash code block"}},
		{name: "prose only", text: "I think the answer is 4.", kind: polyloop.DecisionInvalid, contains: []string{"no ```bash code block"}},
		{name: "other languages named", text: "```python\nx\n```\n```\ny\n```\n```python\nz\n```", kind: polyloop.DecisionInvalid,
			contains: []string{"a ```python block", "a code block without a language", "only ```bash blocks are run"}},
		{name: "two blocks", text: "```bash\na\n```\n```bash\nb\n```", kind: polyloop.DecisionInvalid, contains: []string{"contains 2 ```bash code blocks"}},
		{name: "three blocks", text: strings.Repeat("```bash\na\n```\n", 3), kind: polyloop.DecisionInvalid, contains: []string{"contains 3 "}},
		{name: "unclosed", text: "text\n```bash\nls\n", kind: polyloop.DecisionInvalid, contains: []string{"opened at line 2", "never closed"}},
		{name: "empty block", text: "```bash\n  \n```", kind: polyloop.DecisionInvalid, contains: []string{"is empty"}},
		{name: "inline fence is not a block", text: "```bash ls```", kind: polyloop.DecisionInvalid, contains: []string{"no ```bash"}},
		{name: "four-space indent is not a fence", text: "    ```bash\n    ls\n    ```", kind: polyloop.DecisionInvalid, contains: []string{"no ```bash"}},
		{name: "final marker", parser: marker, text: "Done.\nFINAL ANSWER: 42\nthat is all", kind: polyloop.DecisionFinal, answer: "42\nthat is all"},
		{name: "indented final marker", parser: marker, text: "  FINAL ANSWER:   yes  ", kind: polyloop.DecisionFinal, answer: "yes"},
		{name: "marker inside a block is code", parser: marker, text: "```bash\necho 'FINAL ANSWER: no'\n```", kind: polyloop.DecisionAct, code: "echo 'FINAL ANSWER: no'"},
		{name: "marker not at line start", parser: marker, text: "my FINAL ANSWER: x", kind: polyloop.DecisionInvalid, contains: []string{"no ```bash", `"FINAL ANSWER:"`}},
		{name: "marker and code", parser: marker, text: "```bash\nls\n```\nFINAL ANSWER: x", kind: polyloop.DecisionInvalid, contains: []string{"both"}},
		{name: "without marker option a marker line is prose", text: "FINAL ANSWER: x", kind: polyloop.DecisionInvalid, contains: []string{"no ```bash"}},
		{name: "shell tags", parser: shells, text: "```sh\nls\n```", kind: polyloop.DecisionAct, code: "ls"},
		{name: "shell tags count together", parser: shells, text: "```sh\nls\n```\n```shell\npwd\n```", kind: polyloop.DecisionInvalid, contains: []string{"contains 2 "}},
		{name: "python lang", parser: python, text: "```python\nprint(1)\n```", kind: polyloop.DecisionAct, code: "print(1)"},
		{name: "python parser ignores bash", parser: python, text: "```bash\nls\n```", kind: polyloop.DecisionInvalid, contains: []string{"no ```python", "a ```bash block"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := tt.parser
			if p == nil {
				p = codeparser.New(codeparser.Options{})
			}
			d := parsertest.Parse(t, p, polyloop.ModelReply{Text: tt.text}, codeAction)
			if d.Kind() != tt.kind {
				t.Fatalf("Parse = %#v, want kind %s", d, tt.kind)
			}
			switch d := d.(type) {
			case polyloop.Act:
				want := polyloop.Action{Lang: langOf(p), Code: tt.code}
				if !d.Actions[0].Equal(want) {
					t.Errorf("action = %#v, want %#v", d.Actions, want)
				}
			case polyloop.Final:
				if d.Answer != tt.answer {
					t.Errorf("answer = %q, want %q", d.Answer, tt.answer)
				}
			case polyloop.Invalid:
				for _, s := range tt.contains {
					if !strings.Contains(d.Feedback, s) {
						t.Errorf("feedback %q does not contain %q", d.Feedback, s)
					}
				}
			}
		})
	}
}

func langOf(p *codeparser.Parser) string {
	var c struct{ Lang string }
	mustUnmarshal(p.Describe().Config, &c)
	return c.Lang
}

func mustUnmarshal(raw []byte, v any) {
	if err := json.Unmarshal(raw, v); err != nil {
		panic(err)
	}
}

func TestToolCallsIgnored(t *testing.T) {
	t.Parallel()
	reply := polyloop.ModelReply{Text: "```bash\nls\n```", ToolCalls: []polyloop.ToolCall{{ID: "c1", Name: "shell", Args: []byte(`{}`)}}}
	d := parsertest.Parse(t, codeparser.New(codeparser.Options{}), reply, codeAction)
	act, ok := d.(polyloop.Act)
	if !ok || act.Actions[0].CallID != "" || act.Actions[0].Tool != "" || act.Actions[0].Code != "ls" {
		t.Fatalf("Parse = %#v, want the code action without call id or tool", d)
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	tests := []struct {
		opts codeparser.Options
		want string
	}{
		{codeparser.Options{}, `{"version":1,"lang":"bash","tags":["bash"]}`},
		{codeparser.Options{Lang: "python", Tags: []string{"Python", "py", " "}, FinalMarker: "ANSWER:"},
			`{"version":1,"lang":"python","tags":["python","py"],"final_marker":"ANSWER:"}`},
	}
	for _, tt := range tests {
		c := codeparser.New(tt.opts).Describe()
		if c.Name != "codeparser" || string(c.Config) != tt.want {
			t.Errorf("Describe(%+v) = %s %s, want codeparser %s", tt.opts, c.Name, c.Config, tt.want)
		}
	}
	var _ polyloop.Describer = codeparser.New(codeparser.Options{})
}
