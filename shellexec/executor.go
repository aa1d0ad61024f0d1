package shellexec

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/polyloop/polyloop"
)

var _ polyloop.ActionExecutor = (*Executor)(nil)
var _ polyloop.Describer = (*Executor)(nil)

// codeLangs are the code-action languages the executor runs.
var codeLangs = []string{"", "bash", "sh", "shell"}

// bashArgs are the arguments of the bash tool.
type bashArgs struct {
	Command string `json:"command" jsonschema:"the command to run with bash -c in the working directory"`
}

// bashSchema is the bash tool's parameter schema, encoded and resolved; it
// is built on first use, so that a process that runs no shell action does
// not pay for it at start.
var bashSchema = sync.OnceValues(mustSchema)

func mustSchema() (json.RawMessage, *jsonschema.Resolved) {
	s, err := jsonschema.For[bashArgs](nil)
	if err != nil {
		panic(err) // a fixed struct: cannot fail
	}
	r, err := s.Resolve(nil)
	if err != nil {
		panic(err)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return raw, r
}

// Execute implements polyloop.ActionExecutor; see the package documentation.
func (e *Executor) Execute(ctx context.Context, action polyloop.Action) (polyloop.ActionOutcome, error) {
	if err := ctx.Err(); err != nil {
		return polyloop.ActionOutcome{}, fmt.Errorf("shellexec: %w", err)
	}
	command, why := commandOf(action)
	if why != "" {
		return polyloop.ActionOutcome{Status: polyloop.NotExecuted, Observation: why}, nil
	}
	if e.opts.InEnvironment {
		return e.runInEnv(ctx, command)
	}
	return e.run(ctx, command)
}

// commandOf extracts the command to run, or says why there is none.
func commandOf(a polyloop.Action) (string, string) {
	if a.IsCode() {
		if !slices.Contains(codeLangs, a.Lang) {
			return "", fmt.Sprintf("shellexec runs shell code only, not %q", a.Lang)
		}
		if strings.TrimSpace(a.Code) == "" {
			return "", "the code block is empty"
		}
		return a.Code, ""
	}
	if a.Tool != ToolName {
		return "", fmt.Sprintf("unknown tool %q; the only tool is %q", a.Tool, ToolName)
	}
	var instance any
	if err := json.Unmarshal(orEmpty(a.Args), &instance); err != nil {
		return "", fmt.Sprintf("arguments are not valid JSON: %v", err)
	}
	_, resolved := bashSchema()
	if err := resolved.Validate(instance); err != nil {
		return "", fmt.Sprintf("arguments do not match the tool's schema: %v", err)
	}
	var args bashArgs
	if err := json.Unmarshal(a.Args, &args); err != nil {
		return "", fmt.Sprintf("arguments do not decode: %v", err)
	}
	if strings.TrimSpace(args.Command) == "" {
		return "", "the command is empty"
	}
	return args.Command, ""
}

func orEmpty(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	return raw
}

// ToolSpecs returns the spec of the bash tool, for polyloop.Agent.Tools.
func (e *Executor) ToolSpecs() []polyloop.ToolSpec {
	params, _ := bashSchema()
	desc := "Run a shell command with bash in the working directory. Each call starts a fresh shell: " +
		"only files persist between calls. Output (stdout and stderr) is returned, cut to " +
		fmt.Sprint(e.opts.OutputLimit) + " characters."
	if e.opts.InEnvironment {
		desc = "Run a shell command with " + e.opts.Shell + " in the working directory of an isolated environment " +
			"(no network unless allowed). Each call starts a fresh shell: only files persist between calls. " +
			"Output (stdout, then stderr) is returned, cut to " + fmt.Sprint(e.opts.OutputLimit) + " characters."
	}
	return []polyloop.ToolSpec{{
		Name:        ToolName,
		Description: desc,
		Parameters:  slices.Clone(params),
		Replay:      e.opts.ToolReplay,
	}}
}

// Describe implements polyloop.Describer. The working directory is left out
// on purpose: per-run scratch directories would make every snapshot unique,
// and what the directory holds is task state, not configuration. Env and
// EnvAllow enter by name only, never by value.
func (e *Executor) Describe() polyloop.Component {
	envNames := make([]string, 0, len(e.opts.Env))
	for k := range e.opts.Env {
		envNames = append(envNames, k)
	}
	sort.Strings(envNames)
	allow := slices.Clone(e.opts.EnvAllow)
	sort.Strings(allow)
	cfg, _ := json.Marshal(struct { // plain strings and numbers always encode
		Shell        string                `json:"shell"`
		TimeoutMS    int64                 `json:"timeout_ms"`
		OutputLimit  int                   `json:"output_limit"`
		DefaultPath  string                `json:"default_path"`
		DefaultLang  string                `json:"default_lang"`
		EnvAllow     []string              `json:"env_allow,omitempty"`
		InEnv        bool                  `json:"in_environment,omitempty"`
		Env          []string              `json:"env,omitempty"`
		DoneSentinel string                `json:"done_sentinel,omitempty"`
		ToolReplay   polyloop.ReplayPolicy `json:"tool_replay"`
		Reconcile    string                `json:"reconcile,omitempty"`
	}{e.opts.Shell, e.opts.Timeout.Milliseconds(), e.opts.OutputLimit, DefaultPath, DefaultLang,
		allow, e.opts.InEnvironment, envNames, e.opts.DoneSentinel, e.opts.ToolReplay, e.opts.Reconcile})
	return polyloop.Component{Name: "shellexec", Config: cfg}
}
