package agentfile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// problems checks a file and returns its problems as "line:col field: msg"
// lines, without the file name.
func problems(t *testing.T, src string) []string {
	t.Helper()
	p := writeFile(t, "agent.yaml", src)
	_, err := Check(p)
	if err == nil {
		return nil
	}
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("Check: %v does not match ErrInvalid", err)
	}
	var out []string
	for _, line := range strings.Split(err.Error(), "\n") {
		out = append(out, strings.TrimPrefix(line, p+":"))
	}
	return out
}

// TestCheckReportsEveryDecodingProblem: unknown keys, a duplicate key and
// values of the wrong type, five in all, come in one report in file order,
// each with its position; the checks of the values that did decode run as
// well, and a value that did not decode is not reported twice.
func TestCheckReportsEveryDecodingProblem(t *testing.T) {
	t.Parallel()
	src := `name: a
model:
  provider: [script]
  script: [{text: hi}]
  temprature: 0.5
parser:
  knd: json
limits:
  max_steps: 1.5
  max_tokens: -3
  max_steps: 4
tools:
  shell: {timeout_ms: soon}
`
	got := problems(t, src)
	want := []string{
		"3:13: model.provider: expected a value of type string, found list",
		`5:3: model.temprature: unknown field "temprature" (did you mean temperature?)`,
		`7:3: parser.knd: unknown field "knd" (did you mean kind?)`,
		"9:14: limits.max_steps: expected a value of type integer, found number",
		"10:15: limits.max_tokens: expected zero or a positive integer, found -3",
		`11:3: limits.max_steps: mapping key "max_steps" already defined at 9:3`,
		"13:23: tools.shell.timeout_ms: expected a value of type integer, found string",
	}
	if len(got) != len(want) {
		t.Fatalf("%d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d:\n got %s\nwant %s…", i, got[i], want[i])
		}
	}
}

func TestUnknownFieldNamesTheKeysOfItsMapping(t *testing.T) {
	t.Parallel()
	got := problems(t, scriptHead+"limits: {steps: 3}\n")
	want := `6:10: limits.steps: unknown field "steps": the keys of limits are max_steps, max_tokens, max_cost_usd, observation_limit, time_limit, working_limit (docs/agent-file.md)`
	if len(got) != 1 || got[0] != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	got = problems(t, "nmae: a\n"+scriptHead[len("name: a\n"):])
	if len(got) == 0 || !strings.Contains(got[0], `unknown field "nmae" (did you mean name?): the keys of the top level are name, system, system_file, model,`) {
		t.Fatalf("got %q", got)
	}
}

func TestEmptyFileSaysSo(t *testing.T) {
	t.Parallel()
	for name, src := range map[string]string{
		"empty":         "",
		"blank lines":   "\n\n  \n",
		"comments only": "# an agent, some day\n# name: x\n",
		"marker only":   "---\n# nothing\n",
	} {
		got := problems(t, src)
		if len(got) != 1 || !strings.Contains(got[0], "the agent file is empty") {
			t.Errorf("%s: %q, want a single problem saying the file is empty", name, got)
		}
	}
}

func TestSeveralDocumentsAreRefused(t *testing.T) {
	t.Parallel()
	got := problems(t, scriptHead+"---\nname: b\n")
	if len(got) != 1 || !strings.HasPrefix(got[0], "6:1: the file holds 2 YAML documents") {
		t.Fatalf("got %q", got)
	}
}

// bomb is an agent file whose scripted tool arguments hold levels of
// anchors, each level nine aliases of the one before: 9^levels strings once
// expanded.
func bomb(levels int) string {
	var b strings.Builder
	b.WriteString("name: bomb\nmodel:\n  provider: script\n  script:\n    - tool: t\n      args:\n")
	b.WriteString("        l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "        l%d: &l%d [", i, i)
		for j := range 9 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// TestAliasBombsAreRefused: alias expansion is bounded before anything is
// decoded, with the position of the alias that crosses the bound.
func TestAliasBombsAreRefused(t *testing.T) {
	t.Parallel()
	for _, levels := range []int{6, 9} {
		p := writeFile(t, "bomb.yaml", bomb(levels))
		_, err := Check(p)
		if !errors.Is(err, ErrLimit) || !errors.Is(err, ErrInvalid) {
			t.Fatalf("%d levels: Check = %v, want ErrLimit", levels, err)
		}
		var e *Error
		if !errors.As(err, &e) || e.Line < 8 || e.Column == 0 || !strings.Contains(e.Msg, "bytes that aliases may add") {
			t.Errorf("%d levels: %v, want a position on an alias line and what the limit is", levels, err)
		}
	}
	// A moderate use of anchors is fine, and decodes to the expanded values.
	cfg, err := Load(context.Background(), writeFile(t, "ok.yaml", bomb(2)), nil)
	if err != nil {
		t.Fatalf("two levels of anchors: %v", err)
	}
	if args := string(cfg.File.Model.Script[0].Args["l2"].([]any)[8].([]any)[0].([]any)[0].(string)); args != "lol" {
		t.Errorf("the alias did not expand: %q", args)
	}
}

func TestTooManyAliasesAreRefused(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(scriptHead + "tools:\n  shell:\n    env_allow: [&v HOME")
	for range MaxAliases + 1 {
		b.WriteString(", *v")
	}
	b.WriteString("]\n")
	_, err := Check(writeFile(t, "a.yaml", b.String()))
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), fmt.Sprintf("more than %d aliases", MaxAliases)) {
		t.Fatalf("Check = %v, want ErrLimit on the alias count", err)
	}
}

// TestDeepNestingIsRefusedWithAPosition nests mappings and lists 10,000
// deep, in flow and in block style: refused quickly, at the line and column
// where the limit is crossed.
func TestDeepNestingIsRefusedWithAPosition(t *testing.T) {
	t.Parallel()
	const n = 10000
	block := strings.Builder{}
	block.WriteString("name: a\nsystem:\n")
	for i := range n / 10 {
		block.WriteString(strings.Repeat(" ", i+1) + "- \n")
	}
	for name, src := range map[string]string{
		"flow lists":    "name: a\nsystem: " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n",
		"flow mappings": "name: a\nsystem: " + strings.Repeat("{a: ", n) + "1" + strings.Repeat("}", n) + "\n",
		"dashes":        "name: a\nsystem:\n  " + strings.Repeat("- ", n) + "x\n",
		"block":         block.String(),
	} {
		_, err := Check(writeFile(t, "deep.yaml", src))
		var e *Error
		if !errors.Is(err, ErrLimit) || !errors.As(err, &e) || e.Line < 2 || e.Column == 0 {
			t.Errorf("%s: Check = %v, want ErrLimit with a position", name, err)
			continue
		}
		if !strings.Contains(e.Msg, fmt.Sprintf("deeper than %d levels", MaxDepth)) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// An alias may not bring in more depth than the limit either.
	deep := "name: a\nmodel:\n  provider: script\n  script:\n    - tool: t\n      args: {x: &d " + strings.Repeat("[", MaxDepth-10) + strings.Repeat("]", MaxDepth-10) +
		"}\n    - tool: t\n      args: {a: {b: {c: {d: {e: {f: {g: {h: {i: {j: {k: *d}}}}}}}}}}}\n"
	if _, err := Check(writeFile(t, "alias-deep.yaml", deep)); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "nests its anchor's value deeper") {
		t.Errorf("a deep alias: Check = %v, want ErrLimit", err)
	}
}

func TestLargeFilesAreRefused(t *testing.T) {
	t.Parallel()
	src := scriptHead + "system: " + strings.Repeat("x", MaxFileSize) + "\n"
	_, err := Check(writeFile(t, "big.yaml", src))
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), fmt.Sprintf("larger than %d bytes", MaxFileSize)) {
		t.Fatalf("Check = %v, want ErrLimit on the size", err)
	}
}

// TestScalarsAreStrict: a value of another type is never converted
// silently (1.5 is not an integer, "0.5" is not a number); a string takes
// any scalar as written.
func TestScalarsAreStrict(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		scriptHead + "limits: {max_steps: 1.5}\n":                 "expected a value of type integer, found number",
		scriptHead + "limits: {max_steps: '3'}\n":                 "expected a value of type integer, found string",
		scriptHead + "  temperature: '0.5'\n":                     "expected a value of type number, found string",
		scriptHead + "  temperature: .inf\n":                      "expected a value of type number, found infinity",
		scriptHead + "parser: {options: {require_action: yes}}\n": "expected a value of type boolean (true or false), found string",
		scriptHead + "limits: 3\n":                                "expected a value of type mapping, found integer",
	} {
		got := problems(t, src)
		if len(got) != 1 || !strings.Contains(got[0], want) {
			t.Errorf("%q: %q, want one problem saying %q", src, got, want)
		}
	}
	f, err := Check(writeFile(t, "ok.yaml", scriptHead+"  temperature: 1\ntools:\n  shell:\n    env: {CI: 1, DEBUG: true, NAME: !!str 12}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if *f.Model.Temperature != 1 || f.Tools.Shell.Env["CI"] != "1" || f.Tools.Shell.Env["DEBUG"] != "true" || f.Tools.Shell.Env["NAME"] != "12" {
		t.Errorf("decoded %v %v", *f.Model.Temperature, f.Tools.Shell.Env)
	}
}

// TestMergeKeysAndEmptyValues: "<<" merges a mapping (own keys win), and an
// empty tools.shell means a shell with the defaults.
func TestMergeKeysAndEmptyValues(t *testing.T) {
	t.Parallel()
	src := "name: a\nmodel:\n  provider: script\n  script:\n    - &turn {tool: t, args: {x: 1}, id: c1}\n    - <<: *turn\n      id: c2\ntools:\n  shell:\n"
	f, err := Check(writeFile(t, "a.yaml", src))
	if err != nil {
		t.Fatal(err)
	}
	second := f.Model.Script[1]
	if second.Tool != "t" || second.ID != "c2" || fmt.Sprint(second.Args["x"]) != "1" {
		t.Errorf("merged turn %+v", second)
	}
	if f.Tools.Shell == nil {
		t.Error("an empty tools.shell gave no shell")
	}
}
