package agentfile

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/polyloop/polyloop"
)

// router is the executor of an agent with several tool sources (a shell and
// MCP servers) or none: it hands each action to the executor that offers its
// tool, and code actions to the shell. It decides nothing else: the status,
// the error and the cancellation are the owner's.
type router struct {
	parts  []routed
	owners map[string]polyloop.ActionExecutor
	specs  []polyloop.ToolSpec
	code   polyloop.ActionExecutor // nil: code actions are not executed
}

var _ polyloop.ToolLister = (*router)(nil)

type routed struct {
	name string
	exec polyloop.ActionExecutor
}

// Execute implements polyloop.ActionExecutor. An action no executor offers
// is NotExecuted.
func (r *router) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	if a.IsCode() {
		if r.code == nil {
			return polyloop.ActionOutcome{Status: polyloop.NotExecuted, Observation: "code actions need a shell: the agent has no tools.shell"}, nil
		}
		return r.code.Execute(ctx, a)
	}
	owner, ok := r.owners[a.Tool]
	if !ok {
		return polyloop.ActionOutcome{Status: polyloop.NotExecuted, Observation: fmt.Sprintf("unknown tool %q", a.Tool)}, nil
	}
	return owner.Execute(ctx, a)
}

// ToolSpecs implements polyloop.ToolLister: the tools of the routed
// executors, in order. The result is a fresh copy.
func (r *router) ToolSpecs() []polyloop.ToolSpec {
	out := make([]polyloop.ToolSpec, len(r.specs))
	for i, s := range r.specs {
		s.Parameters = slices.Clone(s.Parameters)
		out[i] = s
	}
	return out
}

// Describe implements polyloop.Describer: the routed executors' own
// descriptions, in order.
func (r *router) Describe() polyloop.Component {
	type entry struct {
		Name      string             `json:"name"`
		Component polyloop.Component `json:"component"`
	}
	entries := make([]entry, len(r.parts))
	for i, p := range r.parts {
		entries[i] = entry{Name: p.name, Component: polyloop.Describe(p.exec)}
	}
	cfg, _ := json.Marshal(map[string]any{"executors": entries})
	return polyloop.Component{Name: "agentfile.router", Config: cfg}
}

// deferredExec is the router's owner of the deferred tools: the loop never
// executes their actions (it waits for their delivery), so an action reaching
// it was not executed.
type deferredExec struct{}

// Execute implements polyloop.ActionExecutor: NotExecuted, always.
func (deferredExec) Execute(_ context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	return polyloop.ActionOutcome{Status: polyloop.NotExecuted,
		Observation: fmt.Sprintf("tool %q is deferred: its results are delivered from outside (polyloop deliver), never executed", a.Tool)}, nil
}

// Describe implements polyloop.Describer.
func (deferredExec) Describe() polyloop.Component {
	return polyloop.Component{Name: "agentfile.deferred"}
}

var (
	_ polyloop.Reconciler     = (*router)(nil)
	_ polyloop.ReconcileScope = (*router)(nil)
)

// owner is the executor an action goes to, or nil.
func (r *router) owner(a polyloop.Action) polyloop.ActionExecutor {
	if a.IsCode() {
		return r.code
	}
	return r.owners[a.Tool]
}

// Reconciles implements polyloop.ReconcileScope: the actions whose owner
// reconciles them.
func (r *router) Reconciles(a polyloop.Action) bool {
	owner := r.owner(a)
	if _, ok := owner.(polyloop.Reconciler); !ok {
		return false
	}
	sc, ok := owner.(polyloop.ReconcileScope)
	return !ok || sc.Reconciles(a)
}

// Reconcile implements polyloop.Reconciler: the answer of the action's
// owner, or unknown when it does not reconcile.
func (r *router) Reconcile(ctx context.Context, q polyloop.ReconcileQuery) (polyloop.Verdict, error) {
	rec, ok := r.owner(q.Action).(polyloop.Reconciler)
	if !ok {
		return polyloop.Verdict{Kind: polyloop.VerdictUnknown, Said: fmt.Sprintf("no reconciler for %q", q.Action.Tool)}, nil
	}
	return rec.Reconcile(ctx, q)
}
