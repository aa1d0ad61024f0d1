package agentfile

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/polyloop/polyloop/anthropicmodel"
	"github.com/polyloop/polyloop/mcpexec"
	"github.com/polyloop/polyloop/openaimodel"
)

// The components an agent file builds report their errors in terms of their
// Go options. These functions say the errors a file can cause in the file's
// own words — its keys, the environment variables it reads — at the position
// of the key concerned. Each keeps the component's error reachable through
// errors.Is and errors.As.

// keyNotSet is the error for an api_key_env naming a variable that is unset:
// the client must not fall back to another variable's key.
func (b *builder) keyNotSet(env string) error {
	return b.loc.errorAt(path{"model", "api_key_env"}, fmt.Sprintf(
		"the environment variable %s, which api_key_env names, is not set (or is empty)", env))
}

// modelError says a model client's construction error in agent-file words.
func (b *builder) modelError(err error, env string) error {
	p := path{"model", "provider"}
	var msg string
	switch {
	case errors.Is(err, openaimodel.ErrNoAPIKey):
		msg = fmt.Sprintf("no API key for OpenAI's API: set the environment variable %s%s, "+
			"or set model.base_url to a server that needs no key", env, otherVariable(env, "OPENAI_API_KEY"))
	case errors.Is(err, anthropicmodel.ErrNoAPIKey):
		msg = fmt.Sprintf("no API key for Anthropic's API: set the environment variable %s%s", env, otherVariable(env, "ANTHROPIC_API_KEY"))
	default:
		msg = fmt.Sprintf("cannot set up the %s client: %v", b.f.Model.Provider, err)
	}
	e := b.loc.errorAt(p, msg)
	e.Err = err
	return e
}

// reconcileKey is the key of reconcile that names tool: the tool itself,
// or the tool whose companion it is.
func reconcileKey(reconcile map[string]string, tool string) string {
	if _, ok := reconcile[tool]; ok {
		return tool
	}
	for k, v := range reconcile {
		if v == tool {
			return k
		}
	}
	return tool
}

func otherVariable(env, def string) string {
	if env != def {
		return ""
	}
	return " (or name another variable with model.api_key_env)"
}

// mcpError says why an MCP server could not be set up, at the key concerned.
func (b *builder) mcpError(p path, m MCPSpec, err error) error {
	var unknown *mcpexec.UnknownToolError
	if errors.As(err, &unknown) {
		at := p.at("replay", unknown.Tool)
		key := "replay"
		switch unknown.Option {
		case "Tools":
			at, key = p.at("tools", slices.Index(m.Tools, unknown.Tool)), "tools"
		case "Reconcile":
			at, key = p.at("reconcile", reconcileKey(m.Reconcile, unknown.Tool)), "reconcile"
		}
		msg := fmt.Sprintf("%s names the tool %q, which the MCP server %q does not offer", key, unknown.Tool, m.Name)
		if near := closest(unknown.Tool, unknown.Offered); near != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", near)
		}
		msg += fmt.Sprintf("; its tools: %s", toolList(unknown.Offered))
		e := b.loc.errorAt(at, msg)
		e.Err = err
		return e
	}
	var schema *mcpexec.UnusableSchemaError
	if errors.As(err, &schema) {
		e := b.loc.errorAt(p, fmt.Sprintf("the MCP server %q offers the tool %q with an input schema that cannot be used "+
			"to check its arguments (%v): leave it out, listing the tools to use in tools", m.Name, schema.Tool, schema.Err))
		e.Err = err
		return e
	}
	e := b.loc.errorAt(p, fmt.Sprintf("cannot start MCP server %q: %v", m.Name, err))
	e.Err = err
	return e
}

func toolList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
