package agentfile

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/shellexec"
)

// Gates in the agent file (polyloop's design 0007, this project's 0023):
// approval is a tool's mode, "required" (approval: required on the shell,
// approval: {tool: required} on an MCP server); approval_deadline bounds the
// wait for a decision; tools.deferred declares the tools whose results come
// from outside, each with its own deadline. The mode "policy" needs a Go
// function (polyloop.Agent.ApprovalPolicy) and is refused here.

// gates checks the gates of a file.
func (v *validator) gates(f *File) {
	t := f.Tools
	if s := t.Shell; s != nil {
		p := path{"tools", "shell"}
		v.approvalMode(p.at("approval"), s.Approval)
		v.approvalDeadline(p, s.ApprovalDeadline, s.Approval != "")
		if s.Approval != "" && f.Parser.Kind == "code" {
			v.fail(p.at("approval"), "parser kind code makes code actions, which no approval gates (an approval gates a tool, by name): "+
				"to approve each command, use parser kind toolcall or json, whose actions call the bash tool")
		}
	}
	for i, m := range t.MCP {
		p := path{"tools", "mcp", i}
		for _, tool := range slices.Sorted(maps.Keys(m.Approval)) {
			v.approvalMode(p.at("approval", tool), m.Approval[tool])
			if len(m.Tools) > 0 && !slices.Contains(m.Tools, tool) {
				v.fail(p.at("approval", tool), "approval names the tool %q, which tools leaves out (its tools: %s)", tool, strings.Join(m.Tools, ", "))
			}
		}
		v.approvalDeadline(p, m.ApprovalDeadline, len(m.Approval) > 0)
	}
	names := map[string]bool{}
	for i, d := range t.Deferred {
		v.deferred(path{"tools", "deferred", i}, d, t.Shell != nil, names)
	}
}

// approvalMode checks one approval mode: "required" is the only one a file
// can give.
func (v *validator) approvalMode(p path, mode string) {
	switch polyloop.ApprovalMode(mode) {
	case "", polyloop.ApprovalRequired:
	case polyloop.ApprovalByPolicy:
		v.fail(p, "approval policy needs a Go function (polyloop.Agent.ApprovalPolicy), which an agent file cannot give: "+
			"use approval: required, or build the agent in Go")
	default:
		v.fail(p, "expected %s, found %q", polyloop.ApprovalRequired, mode)
	}
}

func (v *validator) approvalDeadline(p path, d string, approval bool) {
	if d == "" {
		return
	}
	v.duration(p.at("approval_deadline"), d)
	if !approval {
		v.fail(p.at("approval_deadline"), "approval_deadline bounds the wait for an approval: set approval: required, or leave it out")
	}
}

// duration checks a positive Go duration.
func (v *validator) duration(p path, s string) {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		v.fail(p, "expected a duration such as 30m, 24h or 168h (units ns, us, ms, s, m, h), found %q", s)
	case d <= 0:
		v.fail(p, "expected a positive duration, found %q", s)
	}
}

func (v *validator) deferred(p path, d DeferredSpec, shell bool, names map[string]bool) {
	switch {
	case d.Name == "":
		v.fail(p.at("name"), "required: the deferred tool's name, as the model sees it")
	case !toolPrefix.MatchString(d.Name):
		v.fail(p.at("name"), "expected letters, digits, _ and - only (what model providers accept in tool names), found %q", d.Name)
	case names[d.Name]:
		v.fail(p.at("name"), "duplicate deferred tool %q: tool names must be unique", d.Name)
	case shell && d.Name == shellexec.ToolName:
		v.fail(p.at("name"), "the shell's tool is named %q: a deferred tool needs another name", shellexec.ToolName)
	}
	names[d.Name] = true
	if d.Parameters != nil {
		if _, msg := deferredSchema(d.Parameters); msg != "" {
			v.fail(p.at("parameters"), "%s", msg)
		}
	}
	if d.Deadline != "" {
		v.duration(p.at("deadline"), d.Deadline)
	}
}

// deferredSchema converts a deferred tool's parameters to its JSON Schema,
// or says why they cannot be one.
func deferredSchema(params map[string]any) (json.RawMessage, string) {
	raw, err := toJSON(params)
	if err != nil {
		return nil, fmt.Sprintf("expected a JSON Schema, written as a mapping: %v", err)
	}
	switch typ, ok := params["type"]; {
	case !ok:
		return nil, "the parameters of a tool are an object: expected type: object, found no type"
	case typ != "object":
		return nil, fmt.Sprintf("the parameters of a tool are an object: expected type: object, found %q", fmt.Sprint(typ))
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Sprintf("not a JSON Schema polyloop can use: %v", err)
	}
	if _, err := s.Resolve(nil); err != nil {
		return nil, fmt.Sprintf("not a JSON Schema polyloop can use: %v", err)
	}
	return raw, ""
}

// mustDuration is a checked duration ("" is 0).
func mustDuration(s string) time.Duration {
	d, _ := time.ParseDuration(s)
	return d
}

// gated reports whether a file gates any tool: its executor must then list
// the tools with their gates (the router does).
func (f *File) gated() bool {
	t := f.Tools
	if len(t.Deferred) > 0 || (t.Shell != nil && t.Shell.Approval != "") {
		return true
	}
	for _, m := range t.MCP {
		if len(m.Approval) > 0 {
			return true
		}
	}
	return false
}

// shellGates sets the bash tool's approval.
func shellGates(s ShellSpec, tools []polyloop.ToolSpec) {
	for i := range tools {
		if s.Approval != "" && tools[i].Name == shellexec.ToolName {
			tools[i].Approval = polyloop.ApprovalMode(s.Approval)
			tools[i].Deadline = mustDuration(s.ApprovalDeadline)
		}
	}
}

// mcpGates sets the approvals of an MCP server's tools (named without the
// prefix in the file). A tool the server does not offer is an error at its
// key, listing the server's tools.
func (b *builder) mcpGates(p path, m MCPSpec, tools []polyloop.ToolSpec) error {
	byName := map[string]int{}
	var offered []string
	for i, t := range tools {
		own := strings.TrimPrefix(t.Name, m.Prefix)
		byName[own] = i
		offered = append(offered, own)
	}
	for _, tool := range slices.Sorted(maps.Keys(m.Approval)) {
		i, ok := byName[tool]
		if !ok {
			msg := fmt.Sprintf("approval names the tool %q, which the MCP server %q does not offer", tool, m.Name)
			if near := closest(tool, offered); near != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", near)
			}
			return b.loc.errorAt(p.at("approval", tool), msg+"; its tools: "+toolList(offered))
		}
		if m.Approval[tool] != "" {
			tools[i].Approval = polyloop.ApprovalMode(m.Approval[tool])
			tools[i].Deadline = mustDuration(m.ApprovalDeadline)
		}
	}
	return nil
}

// deferredTools are the tool specs of the file's deferred tools.
func deferredTools(ds []DeferredSpec) []polyloop.ToolSpec {
	specs := make([]polyloop.ToolSpec, len(ds))
	for i, d := range ds {
		specs[i] = polyloop.ToolSpec{Name: d.Name, Description: d.Description, Deferred: true, Deadline: mustDuration(d.Deadline)}
		if d.Parameters != nil {
			specs[i].Parameters, _ = deferredSchema(d.Parameters)
		}
	}
	return specs
}
