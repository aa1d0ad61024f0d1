package agentfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
)

func writeFile(t *testing.T, name, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const scriptHead = "name: a\nmodel:\n  provider: script\n  script:\n    - text: hi\n"

func TestCheckRefusesBadFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		src       string
		line, col int
		want      string
	}{
		{"syntax", "name: [a\n", 1, 7, "']' not found"},
		{"duplicate key", scriptHead + "name: b\n", 6, 1, `name: mapping key "name" already defined at 1:1`},
		{"unknown key", scriptHead + "limits:\n  max_step: 3\n", 7, 3, `unknown field "max_step"`},
		{"wrong type", scriptHead + "limits:\n  max_steps: many\n", 7, 14, "expected a value of type integer, found string"},
		{"not a mapping", "- a\n- b\n", 1, 1, "expected a mapping of agent fields"},
		{"missing name", "model:\n  provider: script\n  script: [{text: hi}]\n", 1, 1, "name: required"},
		{"bad provider", "name: a\nmodel:\n  provider: gemini\n", 3, 13, `model.provider: expected one of openai, anthropic, script, found "gemini"`},
		{"missing model id", "name: a\nmodel:\n  provider: openai\n", 3, 3, "model.model: required for provider openai"},
		{"empty script", "name: a\nmodel:\n  provider: script\n", 3, 3, "provider script needs a script"},
		{"bad turn", "name: a\nmodel:\n  provider: script\n  script:\n    - {fail: boom, text: hi}\n", 5, 14, "a failing turn has no text or tool"},
		{"temperature", scriptHead + "  temperature: 3\n", 6, 16, "expected a number from 0 to 2, found 3"},
		{"anthropic temperature", "name: a\nmodel:\n  provider: anthropic\n  model: claude-sonnet-4-5\n  temperature: 0\n", 5, 16, "the Anthropic Messages API takes no temperature"},
		{"parser kind", scriptHead + "parser:\n  kind: regex\n", 7, 9, `expected one of toolcall, json, code, found "regex"`},
		{"foreign option", scriptHead + "parser:\n  kind: toolcall\n  options:\n    lang: python\n", 9, 11, "not an option of parser kind toolcall (its options: require_action, max_actions_per_step, check_args)"},
		{"code without shell", scriptHead + "parser:\n  kind: code\n", 7, 9, "code actions, which run in the shell"},
		{"replay policy", scriptHead + "tools:\n  shell:\n    replay: sometimes\n", 8, 13, `expected replay_safe, never_replay or idempotent, found "sometimes"`},
		{"mcp without target", scriptHead + "tools:\n  mcp:\n    - name: x\n", 8, 7, "expected command (a stdio server) or url"},
		{"mcp both", scriptHead + "tools:\n  mcp:\n    - {name: x, command: srv, url: 'http://h/mcp'}\n", 8, 36, "give command or url, not both"},
		{"negative limit", scriptHead + "limits:\n  max_cost_usd: -1\n", 7, 17, "expected zero or a positive number"},
		{"both prompts", "name: a\nsystem: hi\nsystem_file: p.md\nmodel: {provider: script, script: [{text: x}]}\n", 3, 14, "not both"},
		{"missing prompt file", "name: a\nsystem_file: nope.md\nmodel: {provider: script, script: [{text: x}]}\n", 2, 14, "cannot read the system prompt file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkRefused(t, tt.src, tt.line, tt.col, tt.want)
		})
	}
}

// checkRefused checks that Check refuses src with an *Error at line:col
// that says want (and is no secret).
func checkRefused(t *testing.T, src string, line, col int, want string) {
	t.Helper()
	p := writeFile(t, "agent.yaml", src)
	_, err := Check(p)
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("Check: %v, want an error matching ErrInvalid", err)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Check: %T is not an *Error", err)
	}
	if e.File != p || e.Line != line || e.Column != col {
		t.Errorf("position %s:%d:%d, want %s:%d:%d (%v)", e.File, e.Line, e.Column, p, line, col, err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	if errors.Is(err, ErrSecret) {
		t.Errorf("error %v matches ErrSecret", err)
	}
}

func TestCheckReportsEveryProblemInFileOrder(t *testing.T) {
	t.Parallel()
	p := writeFile(t, "agent.yaml", "name: a\nmodel:\n  provider: script\n  script: [{text: x}]\n  top_p: 2\nlimits:\n  max_steps: -1\n  max_tokens: -5\n")
	_, err := Check(p)
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("Check: %v, want an ErrorList", err)
	}
	var lines []int
	for _, e := range list {
		lines = append(lines, e.Line)
	}
	if len(list) != 3 || lines[0] != 5 || lines[1] != 7 || lines[2] != 8 {
		t.Fatalf("problems on lines %v, want [5 7 8]:\n%v", lines, err)
	}
}

func TestCheckRefusesSecrets(t *testing.T) {
	t.Parallel()
	key := "sk-" + strings.Repeat("aB3dE5fG7h", 4)
	tests := []struct {
		name, src string
		line      int
	}{
		{"openai key in env", scriptHead + "tools:\n  shell:\n    env: {OPENAI_API_KEY: " + key + "}\n", 8},
		{"anthropic key in prompt", "name: a\nsystem: use sk-ant-api03-" + strings.Repeat("Zx9", 10) + " to log in\nmodel: {provider: script, script: [{text: x}]}\n", 2},
		{"token under key-ish name", scriptHead + "tools:\n  mcp:\n    - name: gh\n      command: srv\n      env: {GITHUB_TOKEN: 9f8e7d6c5b4a39281706}\n", 10},
		{"unknown key holding a key", "name: a\napi_key: " + key + "\nmodel: {provider: script, script: [{text: x}]}\n", 2},
		{"password in url", "name: a\nmodel: {provider: openai, model: m, base_url: 'https://u:hunter22@gw.example/v1'}\n", 2},
		{"key-shaped script argument", "name: a\nmodel: {provider: script, script: [{tool: t, args: {note: " + key + "}}]}\n", 2},
		{"key-shaped replay override", scriptHead + "tools:\n  mcp:\n    - name: gh\n      command: srv\n      replay: {x: " + key + "}\n", 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Check(writeFile(t, "agent.yaml", tt.src))
			if !errors.Is(err, ErrSecret) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Check: %v, want ErrSecret and ErrInvalid", err)
			}
			var e *Error
			errors.As(err, &e)
			if e.Line != tt.line {
				t.Errorf("line %d, want %d: %v", e.Line, tt.line, err)
			}
			if strings.Contains(err.Error(), key) || strings.Contains(err.Error(), "hunter22") || strings.Contains(err.Error(), "9f8e7d6c") {
				t.Errorf("the error repeats the secret: %v", err)
			}
		})
	}
}

func TestCheckAcceptsNonSecrets(t *testing.T) {
	t.Parallel()
	src := scriptHead + "  cost_per_token: 0.5\ntools:\n  shell:\n    env: {MAX_TOKENS: '4096', TOKEN_KIND: bearer, GOFLAGS: -mod=mod}\n    env_allow: [OPENAI_API_KEY]\n"
	if _, err := Check(writeFile(t, "agent.yaml", src)); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if _, err := Check(writeFile(t, "agent.yaml", "name: a\nmodel: {provider: openai, model: m, api_key_env: MY_GATEWAY_KEY}\n")); err != nil {
		t.Fatalf("Check with api_key_env: %v", err)
	}
}

// TestKeyishNamesOfUserData checks that the key-ish name rule reads
// configuration names only: tool names in replay overrides and the keys of
// scripted tool arguments are the user's data.
func TestKeyishNamesOfUserData(t *testing.T) {
	t.Parallel()
	for name, src := range map[string]string{
		"replay override": scriptHead + "tools:\n  mcp:\n    - name: auth\n      command: srv\n      replay: {refresh_token: never_replay, get_api_key: replay_safe}\n",
		"script args":     "name: a\nmodel:\n  provider: script\n  script:\n    - {tool: lookup, args: {key: user_profile_42, auth: {password: correct_horse_battery}}}\n",
	} {
		if _, err := Check(writeFile(t, "agent.yaml", src)); err != nil {
			t.Errorf("%s: Check: %v", name, err)
		}
	}
	// The rule still reads the keys of env maps.
	src := scriptHead + "tools:\n  shell:\n    env: {REFRESH_TOKEN: user_profile_42}\n"
	if _, err := Check(writeFile(t, "agent.yaml", src)); !errors.Is(err, ErrSecret) {
		t.Errorf("a token-like value under an env map's key-ish name: Check = %v, want ErrSecret", err)
	}
}

func TestLoadScriptedAgentRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := `name: counter
system_file: prompt.md
model:
  provider: script
  cost_per_token: 0.001
  script:
    - {tool: bash, args: {command: "printf 'a b c' > f.txt && wc -w < f.txt"}}
    - {tool: nope, args: {x: {nested: [1, 2]}}}
    - text: three words
tools:
  shell: {dir: work, replay: replay_safe}
limits: {max_steps: 5}
synthetic: {not_executed: "No such tool."}
`
	if err := os.WriteFile(filepath.Join(dir, "prompt.md"), []byte("Count words."), 0o644); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "agent.yaml")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	if cfg.Agent.System != "Count words." || len(cfg.Agent.Tools) != 1 || cfg.Agent.Tools[0].Replay != polyloop.ReplaySafe {
		t.Fatalf("agent: %+v", cfg.Agent)
	}
	store := memstore.New()
	res, err := cfg.Runner(store).Run(context.Background(), "r1", cfg.Agent, polyloop.Task{Input: "count"})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != polyloop.StopCompleted || res.FinalAnswer != "three words" || res.Totals.Steps != 3 || res.Totals.CostUSD <= 0 {
		t.Fatalf("result: %+v", res)
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "r1")
	steps := log.Steps()
	if !strings.Contains(steps[0].Observation, "3") || !steps[1].Synthetic || steps[1].Observation != "No such tool." {
		t.Fatalf("steps: %+v / %+v", steps[0], steps[1])
	}
	if _, err := os.Stat(filepath.Join(dir, "work", "f.txt")); err != nil {
		t.Fatalf("the shell did not run in dir work relative to the agent file: %v", err)
	}
}

func TestScriptChangesTheSnapshot(t *testing.T) {
	t.Parallel()
	load := func(text string) polyloop.ModelParams {
		cfg, err := Load(context.Background(), writeFile(t, "a.yaml", "name: a\nmodel: {provider: script, script: [{text: "+text+"}]}\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Agent.Model
	}
	a, b := load("one"), load("two")
	if a.Extra["script_sha256"] == b.Extra["script_sha256"] || a.Model != "script" {
		t.Fatalf("script hashes %v and %v", a.Extra, b.Extra)
	}
}

func TestLoadRemoteModelsTakeKeysFromTheEnvironment(t *testing.T) {
	t.Parallel()
	key := "test-key-" + strings.Repeat("q7", 12)
	for _, tt := range []struct{ provider, env string }{{"openai", "MY_GATEWAY_KEY"}, {"anthropic", "ANTHROPIC_API_KEY"}} {
		src := "name: a\nmodel: {provider: " + tt.provider + ", model: m}\n"
		if tt.env == "MY_GATEWAY_KEY" {
			src = "name: a\nmodel: {provider: openai, model: m, api_key_env: MY_GATEWAY_KEY}\n"
		}
		var asked []string
		getenv := func(k string) string {
			asked = append(asked, k)
			if k == tt.env {
				return key
			}
			return ""
		}
		cfg, err := Load(context.Background(), writeFile(t, "a.yaml", src), &Options{Getenv: getenv})
		if err != nil {
			t.Fatalf("%s: %v", tt.provider, err)
		}
		if !slices.Contains(asked, tt.env) {
			t.Errorf("%s: the key was not read from %s (asked %v)", tt.provider, tt.env, asked)
		}
		d := polyloop.Describe(cfg.Model)
		if strings.Contains(string(d.Config), key) || strings.Contains(d.Name, key) {
			t.Errorf("%s: the key is in the model's description: %+v", tt.provider, d)
		}
	}
}
