package agentfile

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
)

// parserConfig is the configuration the parser of a loaded file describes.
type parserConfig struct {
	Version    int `json:"version"`
	MaxActions int `json:"max_actions_per_step"`
	ArgCheck   *struct {
		Tools []string `json:"tools"`
	} `json:"arg_check"`
}

func loadParserConfig(t *testing.T, cfg *Config) parserConfig {
	t.Helper()
	var pc parserConfig
	if err := json.Unmarshal(polyloop.Describe(cfg.Parser).Config, &pc); err != nil {
		t.Fatal(err)
	}
	return pc
}

func TestLoadBatchSettings(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"toolcall", "json"} {
		src := "name: a\nparallel_actions: true\nmodel:\n  provider: script\n  parallel_tool_calls: false\n  script: [{text: hi}]\n" +
			"parser:\n  kind: " + kind + "\n  options: {max_actions_per_step: 3, check_args: false}\n" +
			"tools:\n  shell: {dir: work}\n"
		cfg, err := Load(context.Background(), writeFile(t, "a.yaml", src), nil)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		defer cfg.Close()
		if !cfg.Agent.ParallelActions {
			t.Errorf("%s: parallel_actions: true did not reach Agent.ParallelActions", kind)
		}
		if p := cfg.Agent.Model.ParallelToolCalls; p == nil || *p {
			t.Errorf("%s: parallel_tool_calls: false gave ModelParams.ParallelToolCalls %v", kind, p)
		}
		if pc := loadParserConfig(t, cfg); pc.MaxActions != 3 || pc.ArgCheck != nil {
			t.Errorf("%s: parser %+v, want max_actions_per_step 3 and no argument check", kind, pc)
		}
	}
}

func TestLoadBatchDefaults(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"toolcall", "json"} {
		src := "name: a\nmodel: {provider: script, script: [{text: hi}]}\nparser: {kind: " + kind + "}\ntools:\n  shell: {dir: work}\n"
		cfg, err := Load(context.Background(), writeFile(t, "a.yaml", src), nil)
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		defer cfg.Close()
		if cfg.Agent.ParallelActions || cfg.Agent.Model.ParallelToolCalls != nil {
			t.Errorf("%s: parallel_actions %v, parallel_tool_calls %v; want false and unset", kind,
				cfg.Agent.ParallelActions, cfg.Agent.Model.ParallelToolCalls)
		}
		pc := loadParserConfig(t, cfg)
		if pc.MaxActions != 0 || pc.ArgCheck == nil || len(pc.ArgCheck.Tools) != 1 || pc.ArgCheck.Tools[0] != "bash" {
			t.Errorf("%s: parser %+v, want no bound and the arguments of bash checked", kind, pc)
		}
	}
}

// TestArgCheckFeedbackReachesTheModel runs a scripted agent whose first
// call gives the shell tool an argument of the wrong type: the step is
// Invalid, and the feedback the model sees next names the field.
func TestArgCheckFeedbackReachesTheModel(t *testing.T) {
	t.Parallel()
	src := "name: a\nmodel:\n  provider: script\n  script:\n    - {tool: bash, args: {command: [ls]}}\n    - {text: done}\n" +
		"tools:\n  shell: {dir: work}\n"
	cfg, err := Load(context.Background(), writeFile(t, "a.yaml", src), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	store := memstore.New()
	if _, err := cfg.Runner(store).Run(context.Background(), "r", cfg.Agent, polyloop.Task{Input: "list"}); err != nil {
		t.Fatal(err)
	}
	log, err := polyloop.ReadLog(context.Background(), store, "r")
	if err != nil {
		t.Fatal(err)
	}
	const want = `The field "command" of your call to "bash" must be a string, not an array.`
	for _, m := range polyloop.History(log) {
		if m.Feedback && strings.Contains(m.Content, want) {
			return
		}
	}
	t.Fatalf("no feedback in the history says %q: %+v", want, polyloop.History(log))
}

func TestCheckRefusesBadBatchSettings(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, src, want string }{
		{"negative bound", scriptHead + "parser:\n  options: {max_actions_per_step: -1}\n", "expected zero or a positive integer, found -1"},
		{"bound for code", scriptHead + "parser:\n  kind: code\n  options: {max_actions_per_step: 2}\ntools: {shell: {}}\n", "not an option of parser kind code"},
		{"arg check for code", scriptHead + "parser:\n  kind: code\n  options: {check_args: true}\ntools: {shell: {}}\n", "not an option of parser kind code"},
		{"not a boolean", scriptHead + "parallel_actions: often\n", "expected a value of type boolean"},
	} {
		_, err := Check(writeFile(t, "agent.yaml", tt.src))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Check: %v, want an error saying %q", tt.name, err, tt.want)
		}
	}
}
