package agentfile

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
)

// gatedAgent asks for an approved bash command, then a deferred review.
const gatedAgent = `name: gated
model:
  provider: script
  script:
    - {tool: bash, args: {command: "echo shipped"}}
    - {tool: review, args: {diff: "+1 line"}}
    - text: done
tools:
  shell: {dir: work, approval: required, approval_deadline: 24h}
  deferred:
    - name: review
      description: A person reviews the diff and answers.
      parameters:
        type: object
        properties: {diff: {type: string}}
        required: [diff]
      deadline: 72h
synthetic: {denied: "Refused by a person."}
`

// TestGatesFromTheFile: an approval on the shell's bash tool and a deferred
// tool declared in the file reach the agent's tools, with their deadlines,
// and a run waits at each gate in turn.
func TestGatesFromTheFile(t *testing.T) {
	t.Parallel()
	cfg, err := Load(context.Background(), writeFile(t, "agent.yaml", gatedAgent), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	tools := map[string]polyloop.ToolSpec{}
	for _, s := range cfg.Agent.Tools {
		tools[s.Name] = s
	}
	if b := tools["bash"]; b.Approval != polyloop.ApprovalRequired || b.Deadline != 24*time.Hour || b.Deferred {
		t.Errorf("bash: %+v, want approval required with a 24h deadline", b)
	}
	r := tools["review"]
	if !r.Deferred || r.Deadline != 72*time.Hour || r.Approval != "" || r.Description != "A person reviews the diff and answers." {
		t.Errorf("review: %+v, want a deferred tool with a 72h deadline", r)
	}
	var schema map[string]any
	if err := json.Unmarshal(r.Parameters, &schema); err != nil || schema["type"] != "object" {
		t.Errorf("review's parameters %s: %v", r.Parameters, err)
	}
	if cfg.Agent.Synthetic.Denied != "Refused by a person." {
		t.Errorf("synthetic.denied gave %q", cfg.Agent.Synthetic.Denied)
	}
	lister, ok := cfg.Executor.(polyloop.ToolLister)
	if !ok {
		t.Fatalf("the executor %T lists no tools", cfg.Executor)
	}
	if got := lister.ToolSpecs(); len(got) != 2 || got[1].Name != "review" || !got[1].Deferred || got[0].Approval != polyloop.ApprovalRequired {
		t.Errorf("the executor's tools %+v do not match the agent's", got)
	}
	if out, err := cfg.Executor.Execute(context.Background(), polyloop.Action{Tool: "review", Args: json.RawMessage(`{}`)}); err != nil || out.Status != polyloop.NotExecuted {
		t.Errorf("the executor ran the deferred tool: %+v, %v", out, err)
	}

	ctx := context.Background()
	runner := cfg.Runner(memstore.New())
	res, err := runner.Run(ctx, "g1", cfg.Agent, polyloop.Task{Input: "ship it"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Suspended == nil || len(res.Suspended.Approvals) != 1 || res.Suspended.Approvals[0].Deadline == nil {
		t.Fatalf("first invocation: %+v, want suspended on bash's approval with a deadline", res)
	}
	if err := runner.Approve(ctx, "g1", res.Suspended.Approvals[0].ActionID, polyloop.ApprovalDecision{Allow: true, By: "test"}); err != nil {
		t.Fatal(err)
	}
	res, err = runner.Resume(ctx, "g1", cfg.Agent)
	if err != nil {
		t.Fatal(err)
	}
	if res.Suspended == nil || len(res.Suspended.Deliveries) != 1 {
		t.Fatalf("after the approval: %+v, want suspended on review's delivery", res)
	}
	if err := runner.Deliver(ctx, "g1", res.Suspended.Deliveries[0].ActionID,
		polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "approved"}, "test"); err != nil {
		t.Fatal(err)
	}
	res, err = runner.Resume(ctx, "g1", cfg.Agent)
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != polyloop.StopCompleted || res.FinalAnswer != "done" {
		t.Fatalf("after the delivery: %+v", res)
	}
}

// TestNoGatesKeepTheExecutor: an agent file without gates builds the same
// executor as before gates existed (its snapshot must not change).
func TestNoGatesKeepTheExecutor(t *testing.T) {
	t.Parallel()
	cfg, err := Load(context.Background(), writeFile(t, "agent.yaml", scriptHead+"tools:\n  shell: {dir: work}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	if d := polyloop.Describe(cfg.Executor); d.Name == "agentfile.router" {
		t.Errorf("a lone shell without gates is routed: %+v", d)
	}
	if cfg.Agent.Synthetic.Denied != "" || cfg.Agent.Tools[0].Approval != "" || cfg.Agent.Tools[0].Deadline != 0 {
		t.Errorf("agent %+v", cfg.Agent)
	}
}

// TestMCPApproval: approval and approval_deadline of an MCP server name its
// own tools; the agent's tools carry them under the prefixed names. A tool
// the server does not offer is an error that lists its tools.
func TestMCPApproval(t *testing.T) {
	t.Parallel()
	url := whoamiServer(t, "alpha")
	src := scriptHead + "tools:\n  mcp:\n    - {name: a, url: '" + url + "', prefix: a_, approval: {whoami: required}, approval_deadline: 90m}\n"
	cfg, err := Load(context.Background(), writeFile(t, "agent.yaml", src), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	if len(cfg.Agent.Tools) != 1 || cfg.Agent.Tools[0].Name != "a_whoami" || cfg.Agent.Tools[0].Approval != polyloop.ApprovalRequired ||
		cfg.Agent.Tools[0].Deadline != 90*time.Minute {
		t.Errorf("tools %+v, want a_whoami with approval required and a 90m deadline", cfg.Agent.Tools)
	}

	bad := scriptHead + "tools:\n  mcp:\n    - name: a\n      url: '" + url + "'\n      approval: {whoamy: required}\n"
	_, err = Load(context.Background(), writeFile(t, "agent.yaml", bad), nil)
	var e *Error
	if !errors.As(err, &e) || e.Line != 10 || !strings.Contains(err.Error(), `"whoamy"`) || !strings.Contains(err.Error(), "did you mean whoami") ||
		!strings.Contains(err.Error(), "its tools: whoami") {
		t.Errorf("approval of an unknown tool: %v, want it named at line 10 with the server's tools", err)
	}
}

func TestCheckRefusesBadGates(t *testing.T) {
	t.Parallel()
	deferred := func(item string) string { return scriptHead + "tools:\n  deferred:\n    - " + item + "\n" }
	tests := []struct {
		name      string
		src       string
		line, col int
		want      string
	}{
		{"policy from a file", scriptHead + "tools:\n  shell: {approval: policy}\n", 7, 21,
			"tools.shell.approval: approval policy needs a Go function (polyloop.Agent.ApprovalPolicy), which an agent file cannot give: use approval: required, or build the agent in Go"},
		{"unknown mode", scriptHead + "tools:\n  shell: {approval: always}\n", 7, 21, `expected required, found "always"`},
		{"mcp policy", scriptHead + "tools:\n  mcp:\n    - {name: x, command: srv, approval: {send: policy}}\n", 8, 48, "tools.mcp[0].approval.send: approval policy needs a Go function"},
		{"bad duration", scriptHead + "tools:\n  shell: {approval: required, approval_deadline: tomorrow}\n", 7, 50,
			`expected a duration such as 30m, 24h or 168h (units ns, us, ms, s, m, h), found "tomorrow"`},
		{"no unit", scriptHead + "tools:\n  shell: {approval: required, approval_deadline: 30}\n", 7, 50, `found "30"`},
		{"zero deadline", scriptHead + "tools:\n  shell: {approval: required, approval_deadline: 0s}\n", 7, 50, "expected a positive duration"},
		{"deadline without approval", scriptHead + "tools:\n  shell: {approval_deadline: 1h}\n", 7, 30,
			"approval_deadline bounds the wait for an approval: set approval: required"},
		{"mcp deadline without approval", scriptHead + "tools:\n  mcp:\n    - {name: x, command: srv, approval_deadline: 1h}\n", 8, 50,
			"approval_deadline bounds the wait for an approval"},
		{"approval of code actions", scriptHead + "parser: {kind: code}\ntools:\n  shell: {approval: required}\n", 8, 21,
			"parser kind code makes code actions, which no approval gates"},
		{"deferred without name", deferred("{description: x}"), 8, 8, "tools.deferred[0].name: required"},
		{"deferred bad name", deferred("{name: 'a b'}"), 8, 14, "expected letters, digits, _ and - only"},
		{"deferred twice", scriptHead + "tools:\n  deferred:\n    - {name: r}\n    - {name: r}\n", 9, 14, `duplicate deferred tool "r"`},
		{"deferred is bash", scriptHead + "tools:\n  shell: {}\n  deferred:\n    - {name: bash}\n", 9, 14, `the shell's tool is named "bash"`},
		{"deferred schema not an object", deferred("{name: r, parameters: {type: string}}"), 8, 30,
			`the parameters of a tool are an object: expected type: object, found "string"`},
		{"deferred schema unusable", deferred("{name: r, parameters: {type: object, properties: {a: {$ref: '#/nowhere'}}}}"), 8, 30,
			"not a JSON Schema polyloop can use"},
		{"deferred bad deadline", deferred("{name: r, deadline: soon}"), 8, 27, "expected a duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkRefused(t, tt.src, tt.line, tt.col, tt.want)
		})
	}
}

// TestGateNamesAreUserData: the tool names of an approval mapping and the
// property names of a deferred tool's schema are the user's, not key-ish
// configuration names.
func TestGateNamesAreUserData(t *testing.T) {
	t.Parallel()
	src := scriptHead + "tools:\n  mcp:\n    - {name: x, command: srv, approval: {rotate_api_key: required}}\n" +
		"  deferred:\n    - name: fetch\n      parameters: {type: object, properties: {refresh_token: {type: string, default: abc_DEF_123_xyz}}}\n"
	if _, err := Check(writeFile(t, "agent.yaml", src)); err != nil {
		t.Errorf("Check: %v", err)
	}
}
