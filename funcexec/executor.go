package funcexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/polyloop/polyloop"
)

// Executor is a polyloop.ActionExecutor that runs registered Go functions.
// The zero value is not usable: create one with New. It is safe for
// concurrent use.
type Executor struct {
	mu    sync.RWMutex
	tools map[string]*tool
	order []string
}

// New returns an Executor with no tools; add them with Register.
func New() *Executor {
	return &Executor{tools: map[string]*tool{}}
}

var _ polyloop.ActionExecutor = (*Executor)(nil)
var _ polyloop.Describer = (*Executor)(nil)
var _ polyloop.ToolLister = (*Executor)(nil)

func (e *Executor) add(t *tool) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, dup := e.tools[t.spec.Name]; dup {
		return fmt.Errorf("funcexec: tool %q is already registered", t.spec.Name)
	}
	e.tools[t.spec.Name] = t
	e.order = append(e.order, t.spec.Name)
	return nil
}

func (e *Executor) lookup(name string) (*tool, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	t, ok := e.tools[name]
	return t, ok
}

// ToolSpecs implements polyloop.ToolLister: the specs of the registered
// tools, in registration order. The result is a fresh copy.
func (e *Executor) ToolSpecs() []polyloop.ToolSpec {
	e.mu.RLock()
	defer e.mu.RUnlock()
	specs := make([]polyloop.ToolSpec, 0, len(e.order))
	for _, name := range e.order {
		s := e.tools[name].spec
		s.Parameters = slices.Clone(s.Parameters)
		specs = append(specs, s)
	}
	return specs
}

// Describe implements polyloop.Describer: the executor's name and the sorted
// names of its tools (their full specs enter the snapshot through
// Agent.Tools).
func (e *Executor) Describe() polyloop.Component {
	e.mu.RLock()
	names := slices.Clone(e.order)
	e.mu.RUnlock()
	sort.Strings(names)
	cfg, _ := json.Marshal(struct {
		Tools []string `json:"tools"`
	}{names}) // a []string always encodes
	return polyloop.Component{Name: "funcexec", Config: cfg}
}

// Execute implements polyloop.ActionExecutor; see the package documentation
// for the status mapping.
func (e *Executor) Execute(ctx context.Context, action polyloop.Action) (polyloop.ActionOutcome, error) {
	if err := ctx.Err(); err != nil {
		return polyloop.ActionOutcome{}, fmt.Errorf("funcexec: %w", err)
	}
	if action.IsCode() {
		return notExecuted("funcexec runs tool calls only; a code action (lang %q) was refused", action.Lang), nil
	}
	t, ok := e.lookup(action.Tool)
	if !ok {
		return notExecuted("unknown tool %q; the tools are: %s", action.Tool, strings.Join(e.names(), ", ")), nil
	}
	args, why := validArgs(t, action.Args)
	if why != "" {
		return notExecuted("tool %q: %s", action.Tool, why), nil
	}
	out, err := t.call(ctx, args)
	o, err := outcome(ctx, action.Tool, out, err)
	if err != nil {
		return o, err
	}
	return bound(o), nil
}

func (e *Executor) names() []string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return slices.Clone(e.order)
}

// outcome maps what the tool function returned to an outcome, or to the
// context's error when the run was cancelled under it.
func outcome(ctx context.Context, name, out string, err error) (polyloop.ActionOutcome, error) {
	if err == nil {
		return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: out}, nil
	}
	var bad *badArgsError
	if errors.As(err, &bad) {
		return notExecuted("tool %q: arguments do not decode: %v", name, bad.err), nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return polyloop.ActionOutcome{}, fmt.Errorf("funcexec: tool %q: %w", name, errors.Join(ctxErr, err))
	}
	if polyloop.MustPropagate(err) {
		return polyloop.ActionOutcome{}, fmt.Errorf("funcexec: tool %q: %w", name, err)
	}
	var env *EnvironmentError
	if errors.As(err, &env) {
		return polyloop.ActionOutcome{Status: polyloop.EnvError, Observation: err.Error()}, nil
	}
	return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: err.Error()}, nil
}

func notExecuted(format string, args ...any) polyloop.ActionOutcome {
	return polyloop.ActionOutcome{Status: polyloop.NotExecuted, Observation: fmt.Sprintf(format, args...)}
}
