package agentfile

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
)

func TestCheckRefusesBadMemory(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		src       string
		line, col int
		want      string
	}{
		{"namespace", scriptHead + "memory:\n  namespaces: ['']\n", 7, 16, "expected a namespace"},
		{"source", scriptHead + "memory:\n  namespaces: [notes]\n  view: {sources: [facts]}\n", 8, 20, `source "facts" is not one of the memory's namespaces (notes)`},
		{"template", scriptHead + "memory:\n  view: {template: '{{.Nope'}\n", 7, 20, "the view template does not parse"},
		{"template field", scriptHead + "memory:\n  view: {template: '{{.Nope}}'}\n", 7, 20, "the view template does not run on a view"},
		{"endless template", scriptHead + "memory:\n  view: {template: '{{range 100000000000}}{{end}}'}\n", 7, 20, polyloop.ErrTemplateLimit.Error()}, // bodies or time, whichever comes first under load
		{"policy", scriptHead + "memory:\n  maintain: {on_conflict: retry}\n", 7, 27, `expected one of skip, fail, regenerate, found "retry"`},
		{"max proposals", scriptHead + "memory:\n  maintain: {on_conflict: skip, max_proposals: 3}\n", 7, 48, "max_proposals bounds on_conflict: regenerate"},
		{"unknown key", scriptHead + "memory:\n  forget: true\n", 7, 3, `unknown field "forget"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := writeFile(t, "agent.yaml", tt.src)
			_, err := Check(p)
			var e *Error
			if !errors.Is(err, ErrInvalid) || !errors.As(err, &e) {
				t.Fatalf("Check: %v", err)
			}
			if e.Line != tt.line || e.Column != tt.col || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s:%d:%d %v; want %d:%d %q", e.File, e.Line, e.Column, err, tt.line, tt.col, tt.want)
			}
		})
	}
}

const memoryAgent = `name: rememberer
model:
  provider: script
  script:
    - {tool: remember, args: {key: colour, value: blue}}
    - {text: done}
limits: {max_steps: 5}
memory:
  namespaces: [notes]
  tools: true
  view: {name: shown}
  maintain:
    script:
      - text: '{"memory": [{"op": "put", "key": "learnt", "value": "a step"}]}'
    on_proposal_failure: skip
    on_conflict: skip
    on_view_rejected: skip
`

// An agent file with memory: the tools, the view and the maintenance work
// against the run store Config.Runner is given.
func TestLoadMemory(t *testing.T) {
	t.Parallel()
	cfg, err := Load(context.Background(), writeFile(t, "agent.yaml", memoryAgent), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	if mem := cfg.Agent.Memory; mem == nil || mem.View == nil || mem.Maintainer == nil {
		t.Fatalf("agent memory %+v", mem)
	}
	var names []string
	for _, tool := range cfg.Agent.Tools {
		names = append(names, tool.Name)
	}
	if strings.Join(names, ",") != "remember,recall,forget" {
		t.Fatalf("tools %v", names)
	}
	store := memstore.New()
	res, err := cfg.Runner(store).Run(context.Background(), "r", cfg.Agent, polyloop.Task{Input: "remember my colour"})
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("Run: %+v, %v", res, err)
	}
	es, err := store.LoadEntries(context.Background(), []string{"notes"})
	if err != nil || len(es) != 2 {
		t.Fatalf("entries %+v, %v", es, err)
	}
	v, err := store.LoadView(context.Background(), "shown")
	if err != nil || v.Version != 2 {
		t.Fatalf("view %+v, %v", v, err)
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "r")
	intents := 0
	for _, r := range log.Records {
		if in, ok := r.Body.(*polyloop.ModelCallIntent); ok && in.View != nil && in.View.Name == "shown" {
			intents++
		}
	}
	if intents != 2 {
		t.Fatalf("%d intents name the view", intents)
	}
}

type plainStore struct{ polyloop.Store }

// A run store that keeps no memory makes the run fail, saying so, before
// anything is written.
func TestMemoryNeedsAStoreThatKeepsIt(t *testing.T) {
	t.Parallel()
	cfg, err := Load(context.Background(), writeFile(t, "agent.yaml", memoryAgent), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	store := plainStore{memstore.New()}
	_, err = cfg.Runner(store).Run(context.Background(), "r", cfg.Agent, polyloop.Task{Input: "x"})
	if err == nil || !strings.Contains(err.Error(), "keeps none") || !errors.Is(err, polyloop.ErrRunNotStarted) {
		t.Fatalf("err = %v", err)
	}
}
