package agentfile

import (
	"context"
	"errors"
	"testing"

	"github.com/polyloop/polyloop"
)

// fakeExec answers with its name, or fails with err.
type fakeExec struct {
	name string
	err  error
}

func (f fakeExec) Execute(ctx context.Context, a polyloop.Action) (polyloop.ActionOutcome, error) {
	if f.err != nil {
		return polyloop.ActionOutcome{}, f.err
	}
	return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: f.name}, nil
}

func TestRouterRoutesAndPassesThrough(t *testing.T) {
	t.Parallel()
	shell, broken := fakeExec{name: "shell"}, fakeExec{err: context.Canceled}
	r := &router{
		parts:  []routed{{"shell", shell}, {"mcp:x", broken}},
		owners: map[string]polyloop.ActionExecutor{"bash": shell, "read": broken},
		code:   shell,
	}
	ctx := context.Background()
	if out, err := r.Execute(ctx, polyloop.Action{Code: "ls", Lang: "bash"}); err != nil || out.Observation != "shell" {
		t.Errorf("code action: %+v, %v", out, err)
	}
	if out, err := r.Execute(ctx, polyloop.Action{Tool: "bash", Args: []byte(`{}`)}); err != nil || out.Observation != "shell" {
		t.Errorf("bash: %+v, %v", out, err)
	}
	if _, err := r.Execute(ctx, polyloop.Action{Tool: "read"}); !errors.Is(err, context.Canceled) {
		t.Errorf("the owner's error must pass through unchanged, got %v", err)
	}
	if out, err := r.Execute(ctx, polyloop.Action{Tool: "nope"}); err != nil || out.Status != polyloop.NotExecuted {
		t.Errorf("unknown tool: %+v, %v", out, err)
	}
	r.code = nil
	if out, err := r.Execute(ctx, polyloop.Action{Code: "ls"}); err != nil || out.Status != polyloop.NotExecuted {
		t.Errorf("code without shell: %+v, %v", out, err)
	}
	if d := r.Describe(); d.Name != "agentfile.router" || len(d.Config) == 0 {
		t.Errorf("Describe: %+v", d)
	}
}
