package memory_test

import (
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
