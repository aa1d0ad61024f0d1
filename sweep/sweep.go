package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/sweep/ledger"
)

// Store is where a sweep keeps its runs and its ledger: the same store, so
// that the ledger can join the runs' summaries and the scores sit beside
// the runs.
type Store interface {
	polyloop.Store
	ledger.Ledger
}

// Sweep is a sweep ready to run: its definition checked and completed with
// the defaults, its agents hashed, their model calls behind the
// providers' gates. A Sweep is safe for concurrent use: any number of
// Execute calls (a worker's jobs) may run at once, and Run runs many.
type Sweep struct {
	def    Definition
	agents map[string]*Agent // by hash
	gates  map[string]*gate  // by provider key
	slots  chan struct{}     // the command scorers running (MaxScorers)
	// envSlots are the environments held (MaxEnvironments); nil: no bound.
	envSlots chan struct{}

	mu       sync.Mutex
	observer func(Event) // Run's, while it runs
}

// New checks a definition, hashes its agents (Runner.SnapshotOf with an
// empty task) and puts their model calls behind the providers' gates.
// Errors: ErrInvalid for a definition that cannot run (no agents, two
// agents of one name or one snapshot, an invalid name...), or the agent's
// own error when its snapshot cannot be made (polyloop.ErrInvalidConfig).
func New(def Definition) (*Sweep, error) {
	if err := def.validate(); err != nil {
		return nil, err
	}
	def.Epochs = max(def.Epochs, 1)
	if def.Concurrency == 0 {
		def.Concurrency = DefaultConcurrency
	}
	if def.MaxScorers == 0 {
		def.MaxScorers = runtime.NumCPU()
	}
	def.Retry = def.Retry.withDefaults()
	def.RateLimit = def.RateLimit.withDefaults()
	s := &Sweep{def: def, agents: map[string]*Agent{}, gates: map[string]*gate{}, slots: make(chan struct{}, def.MaxScorers)}
	if def.MaxEnvironments > 0 {
		s.envSlots = make(chan struct{}, def.MaxEnvironments)
	}
	names := map[string]bool{}
	for i, a := range def.Agents {
		if err := s.prepare(a); err != nil {
			return nil, fmt.Errorf("agents[%d]: %w", i, err)
		}
		// A provider that keeps environments ahead of Create, or removes
		// them after Destroy returned, counts those against the bound too
		// (not when the sweep keeps the scorers' environments: those are
		// held by no one, and would fill the bound for good).
		if b, ok := a.Environments.(polyloop.EnvBounder); ok && def.MaxEnvironments > 0 && !def.KeepEnvironments {
			b.BoundEnvironments(def.MaxEnvironments)
		}
		if names[a.Agent.Name] {
			return nil, fmt.Errorf("%w: two agents are named %q: a sweep's statistics tell agents apart by name", ErrInvalid, a.Agent.Name)
		}
		if _, dup := s.agents[a.hash]; dup {
			return nil, fmt.Errorf("%w: agents[%d] (%s) has the snapshot of an earlier agent: the same agent twice", ErrInvalid, i, a.Agent.Name)
		}
		names[a.Agent.Name] = true
		s.agents[a.hash] = a
	}
	for _, sc := range def.Scorers {
		if g, ok := sc.(*graderScorer); ok {
			if g.grader == nil {
				return nil, fmt.Errorf("%w: scorer %s has no grader agent", ErrInvalid, g.name)
			}
			if err := s.prepare(g.grader); err != nil {
				return nil, fmt.Errorf("scorer %s: grader: %w", g.name, err)
			}
		}
	}
	return s, nil
}

// prepare hashes an agent and puts its model calls behind its provider's
// gate.
func (s *Sweep) prepare(a *Agent) error {
	r := &polyloop.Runner{Model: a.Model, Parser: a.Parser, Executor: a.Executor, Environments: a.Environments}
	_, hash, err := r.SnapshotOf(a.Agent, polyloop.Task{})
	if err != nil {
		return err
	}
	a.hash = hash
	key := a.provider()
	g, ok := s.gates[key]
	if !ok {
		g = newGate(key, s.def.Providers[key], s.def.RateLimit, s.rateLimited)
		s.gates[key] = g
	}
	a.model = limit(a.Model, g)
	return nil
}

// Name is the sweep's name.
func (s *Sweep) Name() string { return s.def.Name }

// Definition is the sweep's definition, with the defaults filled in.
func (s *Sweep) Definition() Definition { return s.def }

func (s *Sweep) rateLimited(key string, pause time.Duration) {
	s.emit(Event{Kind: EventRateLimited, Provider: key, Delay: pause})
}

func (s *Sweep) emit(ev Event) {
	s.mu.Lock()
	obs := s.observer
	s.mu.Unlock()
	if obs != nil {
		obs(ev)
	}
}

// Manifest is what the ledger records of a sweep (ledger.Sweep.Manifest):
// what its statistics and a process that rebuilds it need.
type Manifest struct {
	Name    string           `json:"name"`
	Agents  []AgentManifest  `json:"agents"`
	Tasks   string           `json:"tasks"`
	Epochs  int              `json:"epochs"`
	Retry   RetryPolicy      `json:"retry"`
	Scorers []ScorerManifest `json:"scorers"`
	// Origin is Definition.Origin.
	Origin         json.RawMessage `json:"origin,omitempty"`
	LibraryVersion string          `json:"library_version"`
}

// AgentManifest is an agent as the manifest records it.
type AgentManifest struct {
	Name     string          `json:"name"`
	Hash     string          `json:"hash"`
	Provider string          `json:"provider"`
	Origin   json.RawMessage `json:"origin,omitempty"`
}

// ScorerManifest is a scorer as the manifest records it; the first is the
// one accuracy reports by default.
type ScorerManifest struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	Description string `json:"description"`
}

// Manifest returns the sweep's manifest.
func (s *Sweep) Manifest() Manifest {
	m := Manifest{Name: s.def.Name, Tasks: s.def.Tasks.Describe(), Epochs: s.def.Epochs, Retry: s.def.Retry,
		Origin: s.def.Origin, LibraryVersion: polyloop.LibraryVersion}
	for _, a := range s.def.Agents {
		m.Agents = append(m.Agents, AgentManifest{Name: a.Agent.Name, Hash: a.hash, Provider: a.provider(), Origin: a.Origin})
	}
	for _, sc := range s.def.Scorers {
		m.Scorers = append(m.Scorers, ScorerManifest{Name: sc.Name(), Version: sc.Version(), Description: sc.Description()})
	}
	return m
}

// record puts the sweep's manifest in the ledger.
func (s *Sweep) record(ctx context.Context, l ledger.Ledger) error {
	b, err := json.Marshal(s.Manifest())
	if err != nil {
		return fmt.Errorf("sweep: manifest: %w", err)
	}
	return l.PutSweep(ctx, ledger.Sweep{Name: s.def.Name, Manifest: b, UpdatedAt: time.Now()})
}

// ReadManifest reads the manifest the ledger holds of the sweep name
// (ledger.ErrNotFound when none).
func ReadManifest(ctx context.Context, l ledger.Ledger, name string) (Manifest, error) {
	sw, err := l.Sweep(ctx, name)
	if err != nil {
		return Manifest{}, err
	}
	var m Manifest
	if err := json.Unmarshal(sw.Manifest, &m); err != nil {
		return Manifest{}, fmt.Errorf("sweep: the manifest of %s: %w", name, err)
	}
	return m, nil
}

// entry is the ledger entry of an attempt.
func (s *Sweep) entry(a *Agent, t Task, epoch, attempt int) (ledger.Entry, error) {
	task, err := json.Marshal(t)
	if err != nil {
		return ledger.Entry{}, fmt.Errorf("sweep: task %q: %w", t.ID, err)
	}
	coord := CoordID(s.def.Name, a.hash, t.ID, epoch)
	e := ledger.Entry{RunID: RunID(coord, attempt), Sweep: s.def.Name, Coord: coord, Agent: a.Agent.Name, AgentHash: a.hash,
		TaskID: t.ID, Epoch: epoch, Attempt: attempt, Task: task, TaskDigest: t.Digest()}
	if attempt > 1 {
		e.Previous = RunID(coord, attempt-1)
	}
	return e, nil
}

// next is the entry of the attempt after e.
func (s *Sweep) next(e ledger.Entry) ledger.Entry {
	n := e
	n.Attempt = e.Attempt + 1
	n.RunID, n.Previous = RunID(e.Coord, n.Attempt), e.RunID
	return n
}
