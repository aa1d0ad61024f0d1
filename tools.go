package polyloop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// ToolLister is implemented by an ActionExecutor that knows the tools it
// runs (funcexec, shellexec, mcpexec). It is optional: an executor without
// it is trusted to run what Agent.Tools describes.
//
// When the Runner's executor is a ToolLister, Run and Resume take the
// agent's tools from it if Agent.Tools is empty, and refuse with
// ErrInvalidConfig an agent whose tools disagree with it: a tool on one side
// only, or a tool whose description, parameter schema or replay policy
// differs. What the model is shown, what the executor runs and the replay
// policy the log records therefore cannot drift apart.
//
// ToolSpecs must return the same tools, in the same order, every time it is
// called for a given executor (the specs enter the run's snapshot), and a
// slice the caller may keep and modify. It may be called concurrently.
type ToolLister interface {
	ToolSpecs() []ToolSpec
}

// resolveAgent checks an agent against the Runner's executor and returns the
// agent to run: its tools filled in from the executor when the agent gives
// none. An empty Agent.Name, or tools that disagree with the executor's, is an
// error matching ErrInvalidConfig that names each problem.
func (r *Runner) resolveAgent(agent Agent) (Agent, error) {
	if strings.TrimSpace(agent.Name) == "" {
		return agent, fmt.Errorf("%w: Agent.Name is empty: every run is listed and counted under its agent's name", ErrInvalidConfig)
	}
	lister, ok := r.Executor.(ToolLister)
	if !ok {
		return agent, nil
	}
	offered := lister.ToolSpecs()
	if len(agent.Tools) == 0 {
		agent.Tools = offered
		return agent, nil
	}
	if diffs := toolDisagreements(agent.Tools, offered); len(diffs) > 0 {
		return agent, fmt.Errorf("%w: Agent.Tools disagree with the tools of the executor (%s), which it lists through ToolSpecs; "+
			"leave Agent.Tools empty to take the executor's, or set them from its ToolSpecs:\n  %s",
			ErrInvalidConfig, Describe(r.Executor).Name, strings.Join(diffs, "\n  "))
	}
	return agent, nil
}

// toolDisagreements names, in the agent's order then the executor's, each
// way in which the agent's tools and the executor's differ.
func toolDisagreements(agent, offered []ToolSpec) []string {
	byName := make(map[string]ToolSpec, len(offered))
	for _, t := range offered {
		byName[t.Name] = t
	}
	var diffs []string
	inAgent := make(map[string]bool, len(agent))
	for _, a := range agent {
		inAgent[a.Name] = true
		e, ok := byName[a.Name]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("tool %q is in Agent.Tools, but the executor does not offer it", a.Name))
			continue
		}
		diffs = append(diffs, specDisagreements(a, e)...)
	}
	for _, e := range offered {
		if !inAgent[e.Name] {
			diffs = append(diffs, fmt.Sprintf("the executor offers tool %q, which Agent.Tools leaves out "+
				"(the model would not be shown it, yet the executor would run it)", e.Name))
		}
	}
	return diffs
}

// specDisagreements compares one tool as the agent and the executor see it.
func specDisagreements(a, e ToolSpec) []string {
	var diffs []string
	if a.Replay.normalize() != e.Replay.normalize() {
		diffs = append(diffs, fmt.Sprintf("tool %q: replay policy %s in Agent.Tools, %s in the executor",
			a.Name, a.Replay.normalize(), e.Replay.normalize()))
	}
	if a.Description != e.Description {
		diffs = append(diffs, fmt.Sprintf("tool %q: the description differs from the executor's", a.Name))
	}
	if !sameJSON(a.Parameters, e.Parameters) {
		diffs = append(diffs, fmt.Sprintf("tool %q: the parameter schema differs from the executor's", a.Name))
	}
	return diffs
}

// sameJSON reports whether two JSON values are equal, whatever their
// spacing and key order. An empty value equals only an empty value.
func sameJSON(a, b json.RawMessage) bool {
	if len(bytes.TrimSpace(a)) == 0 || len(bytes.TrimSpace(b)) == 0 {
		return len(bytes.TrimSpace(a)) == len(bytes.TrimSpace(b))
	}
	if bytes.Equal(a, b) {
		return true
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return slices.Equal(compactJSON(a), compactJSON(b))
	}
	return reflect.DeepEqual(va, vb)
}
