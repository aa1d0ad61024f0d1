package polyloop

import (
	"context"
	"errors"
	"fmt"
)

// AgentMemory is what an agent remembers and how: the view its model calls
// show, and the maintenance that runs after each step. Package memory
// provides both; the loop knows only these interfaces.
type AgentMemory struct {
	// View is shown to the model before each call (nil: none).
	View ContextView
	// Template renders the view (text/template over a ViewContent; empty:
	// DefaultViewTemplate). It is in the snapshot: changing it changes
	// what the model sees.
	Template string
	// Maintainer runs after each step's record (nil: none).
	Maintainer Maintainer
}

// MemorySnapshot is the part of the snapshot that says how the agent
// remembers: the identity of its view and maintainer (Describe) and the
// view's template in force.
type MemorySnapshot struct {
	View       *Component `json:"view,omitempty"`
	Template   string     `json:"template,omitempty"`
	Maintainer *Component `json:"maintainer,omitempty"`
}

func (m *AgentMemory) snapshot() *MemorySnapshot {
	if m == nil || (m.View == nil && m.Maintainer == nil) {
		return nil
	}
	s := &MemorySnapshot{}
	if m.View != nil {
		c := Describe(m.View)
		s.View, s.Template = &c, m.Template
		if s.Template == "" {
			s.Template = DefaultViewTemplate
		}
	}
	if m.Maintainer != nil {
		c := Describe(m.Maintainer)
		s.Maintainer = &c
	}
	return s
}

func (m *AgentMemory) validate() error {
	if m == nil {
		return nil
	}
	if m.View == nil && m.Template != "" {
		return errors.New("memory: a view template without a view")
	}
	t, err := viewTemplate(m.Template)
	if err != nil {
		return fmt.Errorf("memory: view template: %v", err)
	}
	// A field that does not exist fails only when the template runs: run
	// it once on a sample view, with an entry.
	sample := ViewContent{Name: "view", Version: 1, Entries: []ViewEntry{{Namespace: "ns", Key: "key", Version: 1, Value: []byte(`"value"`)}}}
	if _, err := renderView(t, sample); err != nil {
		return fmt.Errorf("memory: view template: %v", err)
	}
	return nil
}

// Maintainer maintains an agent's memory after each step, once the step's
// record is durable: it may propose (InvokeChild, whose reception is
// recorded), write memory and adjust a view (Perform, whose outcome is
// recorded). Each operation commits only its own effect: there is no
// transaction across them and nothing established is rolled back.
//
// Contract:
//   - Maintain runs once per step, in the caller's goroutine; the step's
//     maintenance is done (a maintenance_done record) when it returns nil.
//     The next step starts after that.
//   - An error propagates out of Run/Resume as is and nothing more is
//     recorded: the run is unfinished, and a resume calls Maintain again for
//     the same step. What the log recorded of the first attempt — children
//     received, operations performed — is reused, never run again; an
//     operation's write id lets its store find a commit whose record was
//     lost.
//   - Maintain MUST be deterministic given what it reuses: on resume it
//     must ask for the same operations and children, under the same names
//     and keys.
//   - Cancellation: when ctx is done, Maintain returns promptly with an
//     error that wraps ctx.Err(); what it already recorded stays.
//   - Concurrency: the loop calls Maintain for one step of a run at a time;
//     a maintainer shared by runs MUST be safe for concurrent use.
type Maintainer interface {
	Maintain(ctx context.Context, step MaintainedStep) error
}

// MaintainedStep is the step a Maintainer maintains.
type MaintainedStep struct {
	RunID    string
	Step     int
	Decision DecisionKind
	// Answer is the Final decision's answer.
	Answer string
	// Messages are those the step added to the history: the assistant's
	// message, then the observations of its actions or an Invalid
	// decision's feedback. They belong to the maintainer.
	Messages []Message
	// View is the view version the step's model call showed (nil: none).
	View *ViewRef
}

// Reloader is implemented by a view or maintainer whose entities refuse to
// work after a persistence failure until they are reloaded from their
// authoritative store. Resume calls Reload before it goes on; Run does not.
type Reloader interface {
	Reload(ctx context.Context) error
}

// reloadMemory reloads the agent's view and maintainer for a resume.
func reloadMemory(ctx context.Context, runID string, m *AgentMemory) error {
	if m == nil {
		return nil
	}
	for _, v := range []any{m.View, m.Maintainer} {
		if r, ok := v.(Reloader); ok {
			if err := r.Reload(ctx); err != nil {
				if cerr := ctx.Err(); cerr != nil {
					return errors.Join(cerr, err)
				}
				return persistenceError("reload memory", runID, err)
			}
		}
	}
	return nil
}
