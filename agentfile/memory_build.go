package agentfile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/funcexec"
	"github.com/polyloop/polyloop/memory"
	"github.com/polyloop/polyloop/memory/memorytools"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/toolcallparser"
)

// memoryParts is what the memory section builds at Load. The memory lives
// in the run store, which the caller gives Config.Runner: bind hands it to
// the entities and the proposer.
type memoryParts struct {
	store    *boundStore
	memory   *memory.Memory
	proposer *polyloop.Runner // nil without maintenance
}

// bind gives the parts the run store and sinks.
func (p *memoryParts) bind(store polyloop.Store, sinks []polyloop.EventSink) {
	if p == nil {
		return
	}
	p.store.bind(store)
	if p.proposer != nil {
		p.proposer.Store, p.proposer.Sinks = store, sinks
	}
}

func (b *builder) memoryParts() (*memoryParts, error) {
	p := &memoryParts{store: &boundStore{}}
	var err error
	if p.memory, err = memory.New(p.store, memory.Options{Namespaces: b.f.Memory.namespaces(b.f.Name)}); err != nil {
		return nil, b.loc.errorAt(path{"memory"}, err.Error())
	}
	return p, nil
}

// memoryTools is the executor of remember, recall and forget.
func (b *builder) memoryTools(p *memoryParts) (*funcexec.Executor, error) {
	ex := funcexec.New()
	if err := memorytools.Register(ex, p.memory); err != nil {
		return nil, fmt.Errorf("agentfile: memory tools: %w", err)
	}
	return ex, nil
}

// agentMemory builds the view and the maintainer of the agent.
func (b *builder) agentMemory(cfg *Config) (*polyloop.AgentMemory, error) {
	m, parts := b.f.Memory, cfg.memory
	am := &polyloop.AgentMemory{}
	var view *memory.View
	if vs := m.View; vs != nil {
		name := vs.Name
		if name == "" {
			name = b.f.Name
		}
		var err error
		if view, err = memory.NewView(parts.store, memory.ViewOptions{Name: name, Memory: parts.memory, Sources: vs.Sources}); err != nil {
			return nil, b.loc.errorAt(path{"memory", "view"}, err.Error())
		}
		am.View, am.Template = view, vs.Template
	}
	if ms := m.Maintain; ms != nil {
		maint, err := b.maintainer(cfg, ms, view)
		if err != nil {
			return nil, err
		}
		am.Maintainer = maint
	}
	return am, nil
}

func (b *builder) maintainer(cfg *Config, ms *MaintainSpec, view *memory.View) (*memory.Maintainer, error) {
	p := path{"memory", "maintain"}
	model, params := cfg.Model, cfg.Agent.Model
	if len(ms.Script) > 0 {
		turns, err := b.turns(ms.Script, p.at("script"))
		if err != nil {
			return nil, err
		}
		model = scriptmodel.NewWithOptions(scriptmodel.Options{Model: "script"}, turns...)
		raw, _ := json.Marshal(ms.Script)
		sum := sha256.Sum256(raw)
		params = polyloop.ModelParams{Provider: "script", Model: "script", Extra: map[string]any{"script_sha256": hex.EncodeToString(sum[:])}}
	}
	system, steps := ms.System, ms.MaxSteps
	if system == "" {
		system = memory.DefaultProposerSystem
	}
	if steps == 0 {
		steps = 1
	}
	cfg.memory.proposer = &polyloop.Runner{Model: model, Parser: toolcallparser.New(toolcallparser.Options{}), Executor: funcexec.New()}
	maint, err := memory.NewMaintainer(memory.MaintainerOptions{
		Memory: cfg.memory.memory, View: view,
		Proposer: polyloop.Child{Runner: cfg.memory.proposer, Agent: polyloop.Agent{Name: b.f.Name + ".proposer", System: system,
			Limits: polyloop.Limits{MaxSteps: steps}, Model: params}},
		OnProposalFailure: memory.Policy(policy(ms.OnProposalFailure)), OnConflict: memory.Policy(policy(ms.OnConflict)),
		MaxProposals: ms.MaxProposals, OnViewRejected: memory.Policy(policy(ms.OnViewRejected)), MaxEntries: ms.MaxEntries,
	})
	if err != nil {
		return nil, b.loc.errorAt(p, err.Error())
	}
	return maint, nil
}

// policy is a policy as memory names it: "fail" is its zero value.
func policy(s string) string {
	if s == "fail" {
		return ""
	}
	return s
}

// memoryStore is what a run store that keeps memory implements.
type memoryStore interface {
	memory.Store
	memory.ViewStore
}

// boundStore is the run store's memory, once Config.Runner gave the store:
// before, or for a store that keeps no memory, every call fails.
type boundStore struct {
	mu  sync.RWMutex
	s   memoryStore
	err error
}

func (b *boundStore) bind(s polyloop.Store) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.s, b.err = nil, nil
	if ms, ok := s.(memoryStore); ok {
		b.s = ms
		return
	}
	b.err = fmt.Errorf("agentfile: the agent has memory, and its run store (%T) keeps none (memory.Store and memory.ViewStore)", s)
}

func (b *boundStore) get() (memoryStore, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.s == nil && b.err == nil {
		return nil, fmt.Errorf("agentfile: the agent's memory has no store yet: build the runner with Config.Runner")
	}
	return b.s, b.err
}

func (b *boundStore) LoadEntries(ctx context.Context, ns []string) ([]memory.Entry, error) {
	s, err := b.get()
	if err != nil {
		return nil, err
	}
	return s.LoadEntries(ctx, ns)
}

func (b *boundStore) CommitWrite(ctx context.Context, w memory.Write) (memory.Commit, error) {
	s, err := b.get()
	if err != nil {
		return memory.Commit{}, err
	}
	return s.CommitWrite(ctx, w)
}

func (b *boundStore) LookupWrite(ctx context.Context, id string) (memory.Commit, bool, error) {
	s, err := b.get()
	if err != nil {
		return memory.Commit{}, false, err
	}
	return s.LookupWrite(ctx, id)
}

func (b *boundStore) EntryHeads(ctx context.Context, ids []memory.EntryID) ([]memory.Entry, error) {
	s, err := b.get()
	if err != nil {
		return nil, err
	}
	return s.EntryHeads(ctx, ids)
}

func (b *boundStore) EntryHistory(ctx context.Context, ns, key string) ([]memory.Entry, error) {
	s, err := b.get()
	if err != nil {
		return nil, err
	}
	return s.EntryHistory(ctx, ns, key)
}

func (b *boundStore) Namespaces(ctx context.Context) ([]string, error) {
	s, err := b.get()
	if err != nil {
		return nil, err
	}
	return s.Namespaces(ctx)
}

func (b *boundStore) LoadView(ctx context.Context, name string) (memory.ViewVersion, error) {
	s, err := b.get()
	if err != nil {
		return memory.ViewVersion{}, err
	}
	return s.LoadView(ctx, name)
}

func (b *boundStore) CommitView(ctx context.Context, w memory.ViewWrite) (memory.ViewVersion, error) {
	s, err := b.get()
	if err != nil {
		return memory.ViewVersion{}, err
	}
	return s.CommitView(ctx, w)
}

func (b *boundStore) LookupViewWrite(ctx context.Context, id string) (memory.ViewVersion, bool, error) {
	s, err := b.get()
	if err != nil {
		return memory.ViewVersion{}, false, err
	}
	return s.LookupViewWrite(ctx, id)
}

func (b *boundStore) ViewAt(ctx context.Context, name string, v int64) (memory.ViewVersion, error) {
	s, err := b.get()
	if err != nil {
		return memory.ViewVersion{}, err
	}
	return s.ViewAt(ctx, name, v)
}

func (b *boundStore) Views(ctx context.Context) ([]string, error) {
	s, err := b.get()
	if err != nil {
		return nil, err
	}
	return s.Views(ctx)
}
