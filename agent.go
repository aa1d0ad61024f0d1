package polyloop

import (
	"encoding/json"
	"time"
)

// Agent is the definition of an agent: everything the model can see and
// everything that changes the loop's behaviour, apart from the task. It is
// frozen into the run's snapshot.
type Agent struct {
	Name      string                `json:"name"`
	System    string                `json:"system,omitempty"`
	Tools     []ToolSpec            `json:"tools,omitempty"`
	Synthetic SyntheticObservations `json:"synthetic"`
	Limits    Limits                `json:"limits"`
	Model     ModelParams           `json:"model"`
	// ParallelActions lets the actions of one step's batch (the tool calls
	// of one reply) run concurrently; their intents are then written
	// together before any starts. By default they run one after another,
	// in the reply's order.
	ParallelActions bool `json:"parallel_actions,omitempty"`
	// ApprovalPolicy decides for the tools with ApprovalByPolicy; its Name
	// is in the snapshot.
	ApprovalPolicy *ApprovalPolicy `json:"-"`
	// Memory is what the agent remembers and shows its model, and the
	// maintenance after each step (package memory); the identities of its
	// parts and the view's template are in the snapshot. Nil: none.
	Memory *AgentMemory `json:"-"`
	// Environment, when set, runs the agent's actions in an environment of
	// their own, made by Runner.Environments for each run (SPEC §13):
	// created before the run's first action, its state made durable before
	// every action (the intent names the snapshot), restored on resume,
	// destroyed when the invocation ends. RunID and From are the runner's
	// to set. Its description (EnvDescription) enters the snapshot. Nil:
	// none.
	Environment *EnvSpec `json:"-"`

	// envDesc is Environment's description, resolved by prepare.
	envDesc *EnvDescription
}

// ToolSpec describes one tool to the model and to the library.
type ToolSpec struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of the arguments. It enters the
	// snapshot, so it is held to the log's limits (CheckJSONLimits: at most
	// MaxJSONDepth levels, valid UTF-8): Run, Resume and Fork refuse a
	// schema beyond them with ErrInvalidConfig naming the tool.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// Replay says whether the tool may run again when its outcome is unknown
	// after a crash. The zero value means NeverReplay.
	Replay ReplayPolicy `json:"replay,omitempty"`
	// Approval gates the tool's actions behind a person's decision
	// (Runner.Approve): ApprovalRequired for every action, ApprovalByPolicy
	// for those Agent.ApprovalPolicy says need one. Empty: none.
	Approval ApprovalMode `json:"approval,omitempty"`
	// Deferred marks a tool whose results come from outside (a person, a
	// webhook, another system) through Runner.Deliver: the executor never
	// runs it.
	Deferred bool `json:"deferred,omitempty"`
	// Deadline bounds the wait for an approval or a delivery, from the
	// request (0: no deadline). A resume after it applies the timeout
	// decision: an approval is denied, a delivery is an env_error.
	Deadline time.Duration `json:"deadline,omitempty"`
}

// ApprovalMode says which actions of a tool need a person's decision.
type ApprovalMode string

// The approval modes.
const (
	ApprovalRequired ApprovalMode = "required"
	ApprovalByPolicy ApprovalMode = "policy"
)

// ApprovalPolicy decides which actions of the tools with ApprovalByPolicy
// need a person's decision, from the action itself (for example "shell
// commands outside an allow-list"). Needs MUST be deterministic: a resume
// asks it again about the same actions. Name identifies the policy in the
// snapshot; change it when Needs changes.
type ApprovalPolicy struct {
	Name  string
	Needs func(Action) bool
}

// SyntheticObservations are the texts the library puts into the history when
// an action was not executed or the environment failed. They are part of the
// snapshot, so they cannot drift between runs. Empty fields take the
// defaults DefaultNotExecuted and DefaultEnvError.
type SyntheticObservations struct {
	NotExecuted string `json:"not_executed,omitempty"`
	EnvError    string `json:"env_error,omitempty"`
	// Denied is the text for an action a person denied (or whose approval
	// timed out). It takes its default in the snapshot of an agent with a
	// gated tool only, so that the snapshots of other agents do not change.
	Denied string `json:"denied,omitempty"`
}

// Default synthetic observations.
const (
	DefaultNotExecuted = "The action was not executed: the tool does not exist, its arguments were invalid, or it was refused."
	DefaultEnvError    = "The environment failed and cannot continue."
	DefaultDenied      = "The action was not executed: a person denied it."
)

func (s SyntheticObservations) withDefaults() SyntheticObservations {
	if s.NotExecuted == "" {
		s.NotExecuted = DefaultNotExecuted
	}
	if s.EnvError == "" {
		s.EnvError = DefaultEnvError
	}
	return s
}

// Limits bound a run. A zero field means no limit.
type Limits struct {
	MaxSteps   int     `json:"max_steps,omitempty"`
	MaxTokens  int64   `json:"max_tokens,omitempty"`
	MaxCostUSD float64 `json:"max_cost_usd,omitempty"`
	// ObservationLimit is the number of characters (runes) of an
	// observation that enter the history; the rest is dropped, counted in
	// the step record's TruncatedChars, and replaced by a line saying how
	// many characters were cut ("[… N characters truncated]").
	ObservationLimit int `json:"observation_limit,omitempty"`
	// TimeLimit bounds the run's wall clock, from its run_started's time
	// (a resumed run's time before the resume included, waits at gates
	// too); WorkingLimit bounds the time its model calls and actions took,
	// summed from their records' times (waits at gates excluded). Both are
	// checked before each step, like the budgets: a run finishes
	// time_limit or working_limit once one is reached, and the step under
	// way when it was reached ends first. Zero: no limit.
	TimeLimit    time.Duration `json:"time_limit,omitempty"`
	WorkingLimit time.Duration `json:"working_limit,omitempty"`
}

// ModelParams are the model parameters of an agent. They are in the
// snapshot. Secrets never belong here.
type ModelParams struct {
	Provider        string   `json:"provider,omitempty"`
	Model           string   `json:"model,omitempty"`
	Temperature     *float64 `json:"temperature,omitempty"`
	TopP            *float64 `json:"top_p,omitempty"`
	MaxOutputTokens int      `json:"max_output_tokens,omitempty"`
	Seed            *int64   `json:"seed,omitempty"`
	Stop            []string `json:"stop,omitempty"`
	// Retries is how many times the client retries a failed call (0: none).
	Retries int `json:"retries,omitempty"`
	// RetryBackoffMS is the client's base backoff between retries.
	RetryBackoffMS int `json:"retry_backoff_ms,omitempty"`
	// ParallelToolCalls says whether the model may answer with several tool
	// calls in one reply (OpenAI's parallel_tool_calls, the inverse of
	// Anthropic's disable_parallel_tool_use). Nil means allowed, the
	// providers' default.
	ParallelToolCalls *bool `json:"parallel_tool_calls,omitempty"`
	// Extra holds provider-specific parameters that change what the model
	// does; they are hashed like everything else.
	Extra map[string]any `json:"extra,omitempty"`
}

// Task is one task given to an agent.
type Task struct {
	Input string            `json:"input"`
	Meta  map[string]string `json:"meta,omitempty"`
}

// Component identifies a parser, executor or model client in the snapshot.
type Component struct {
	Name   string          `json:"name"`
	Config json.RawMessage `json:"config,omitempty"`
}
