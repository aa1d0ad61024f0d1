package memory_test

import (
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memory"
	"github.com/polyloop/polyloop/memstore"
)

// The maintainer's identity in the snapshot changes with what changes the
// proposals: the proposer's prompt, limits and model, and the policies.
func TestMaintainerDescribe(t *testing.T) {
	m, err := memory.New(memstore.New(), memory.Options{Namespaces: []string{"notes"}})
	if err != nil {
		t.Fatal(err)
	}
	describe := func(edit func(*memory.MaintainerOptions)) string {
		opts := memory.MaintainerOptions{Memory: m, Proposer: polyloop.Child{Runner: &polyloop.Runner{},
			Agent: polyloop.Agent{Name: "p", System: "propose", Model: polyloop.ModelParams{Model: "a"}}}}
		edit(&opts)
		mt, err := memory.NewMaintainer(opts)
		if err != nil {
			t.Fatal(err)
		}
		return string(mt.Describe().Config)
	}
	base := describe(func(*memory.MaintainerOptions) {})
	for name, edit := range map[string]func(*memory.MaintainerOptions){
		"prompt":   func(o *memory.MaintainerOptions) { o.Proposer.Agent.System = "propose better" },
		"model":    func(o *memory.MaintainerOptions) { o.Proposer.Agent.Model.Model = "b" },
		"limits":   func(o *memory.MaintainerOptions) { o.Proposer.Agent.Limits.MaxSteps = 3 },
		"policy":   func(o *memory.MaintainerOptions) { o.OnConflict = memory.Skip },
		"entries":  func(o *memory.MaintainerOptions) { o.MaxEntries = 5 },
		"proposer": func(o *memory.MaintainerOptions) { o.Proposer.Agent.Name = "q" },
	} {
		if describe(edit) == base {
			t.Errorf("a change of the %s does not change the maintainer's identity: %s", name, base)
		}
	}
}

// A proposal is checked against its documented shape (docs/agent-file.md),
// and a proposal that breaks it is refused with an error naming the field.
func TestProposalShapeNamesTheField(t *testing.T) {
	ns := []string{"notes", "facts"}
	for _, tc := range []struct{ answer, field string }{
		{`{"memory": [{"op": "upsert", "key": "k", "value": 1}]}`, `memory[0].op: "upsert" is neither "put" nor "delete"`},
		{`{"memory": [{"key": "k", "value": 1}]}`, `memory[0].op: missing ("put" or "delete")`},
		{`{"memory": [{"op": "put", "key": "a", "value": 1}, {"op": "put", "value": 2}]}`, `memory[1].key: missing`},
		{`{"memory": [{"op": "put", "key": "k"}]}`, `memory[0].value: a put needs a value`},
		{`{"memory": [{"op": "delete", "key": "k", "value": 1}]}`, `memory[0].value: a delete has no value`},
		{`{"memory": [{"op": "put", "namespace": "diary", "key": "k", "value": 1}]}`, `memory[0].namespace: "diary" is not a namespace of this memory (notes, facts)`},
		{`{"memory": [], "view": {"include": [{"namespace": "notes"}]}}`, `view.include[0].key: missing`},
		{`{"memory": [], "view": {"exclude": [{"namespace": "x", "key": "k"}]}}`, `view.exclude[0].namespace: "x" is not a namespace`},
		{`{"memory": [{"op": 1, "key": "k"}]}`, `memory.op: a string, not a JSON number`},
		{`{"memory": {"op": "put"}}`, `memory: a list, not a JSON object`},
		{`{"memories": []}`, `unknown field "memories"`},
	} {
		_, err := memory.ParseProposal(tc.answer, ns)
		if err == nil || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), "is not a proposal") {
			t.Errorf("%s: err = %v, want it to name %q", tc.answer, err, tc.field)
		}
	}
	p, err := memory.ParseProposal(`{"memory": [{"op": "put", "key": "k", "value": {"a": 1}}, {"op": "put", "namespace": "facts", "key": "f", "value": "x"}], "view": {"include": [{"key": "k"}]}}`, ns)
	if err != nil || len(p.Ops) != 2 || p.Ops[0].Namespace != "notes" || p.View.Include[0].Namespace != "notes" {
		t.Fatalf("a good proposal: %+v, %v", p, err)
	}
}
