package agentfile

// File is the agent file as written: the YAML document decoded strictly
// (unknown keys are errors). Load checks it and builds a Config from it.
type File struct {
	// Name names the agent; it is the "agent" of every run (listing,
	// statistics). Required.
	Name string `yaml:"name"`
	// System is the system prompt, inline. At most one of System and
	// SystemFile.
	System string `yaml:"system"`
	// SystemFile is a file holding the system prompt, relative to the agent
	// file's directory.
	SystemFile string        `yaml:"system_file"`
	Model      ModelSpec     `yaml:"model"`
	Parser     ParserSpec    `yaml:"parser"`
	Tools      ToolsSpec     `yaml:"tools"`
	Limits     LimitsSpec    `yaml:"limits"`
	Synthetic  SyntheticSpec `yaml:"synthetic"`
	// ParallelActions lets the actions of one step's batch (the tool calls
	// of one reply) run concurrently (polyloop.Agent.ParallelActions);
	// default false: one after another, in the reply's order.
	ParallelActions bool `yaml:"parallel_actions"`
	// Memory is what the agent remembers (memory_spec.go); nil: nothing.
	Memory *MemorySpec `yaml:"memory"`
	// Environment runs the agent's actions in an isolated environment of
	// each run's own (docs/environments.md); nil: the shell runs on the
	// host, in tools.shell.dir.
	Environment *EnvironmentSpec `yaml:"environment"`
}

// EnvironmentSpec is the environment each run of the agent gets
// (polyloop.EnvSpec): the shell tool runs inside it.
type EnvironmentSpec struct {
	// Backend is "bwrap" (the daemonless sandbox) or "docker".
	Backend string `yaml:"backend"`
	// Image is the image: a directory name under the sandbox's image
	// directory, or a Docker image name or "sha256:" id.
	Image string `yaml:"image"`
	// WorkDir is the commands' working directory inside (absolute;
	// default "/").
	WorkDir string `yaml:"workdir"`
	// Limits bound the environment's processes together.
	Limits EnvLimitsSpec `yaml:"limits"`
	// Network is "none" (the default: no network but its own loopback) or
	// "allow" (the backend's ordinary outside access; the shell's actions
	// are then never_replay by default, their effects may have left).
	Network string `yaml:"network"`
	// EnvAllow names host variables every command sees (values read at
	// creation; only the names enter the snapshot).
	EnvAllow []string `yaml:"env_allow"`
	// Mounts are host paths visible read-only inside.
	Mounts []EnvMountSpec `yaml:"mounts"`
	// Files are copied in when the environment is created.
	Files []EnvFileSpec `yaml:"files"`
}

// EnvLimitsSpec bounds an environment; zero is no limit.
type EnvLimitsSpec struct {
	// CPUs is CPU time per wall second, in cores (0.5: half a core).
	CPUs float64 `yaml:"cpus"`
	// MemoryMB bounds the memory of all its processes, in MiB.
	MemoryMB int64 `yaml:"memory_mb"`
	// PIDs bounds how many processes and threads exist at once.
	PIDs int64 `yaml:"pids"`
}

// EnvMountSpec is a read-only mount: Source on the host (relative to the
// agent file's directory), Target inside (absolute).
type EnvMountSpec struct {
	Source string `yaml:"source"`
	Target string `yaml:"target"`
}

// EnvFileSpec is a file copied in: its Path inside (absolute), and its
// content, inline (Content) or from a host file relative to the agent
// file's directory (From).
type EnvFileSpec struct {
	Path    string `yaml:"path"`
	Content string `yaml:"content"`
	From    string `yaml:"from"`
	// Executable sets mode 0755 (default 0644).
	Executable bool `yaml:"executable"`
}

// ModelSpec configures the model client. Every field except the script,
// cost_per_token, prices and api_key_env enters the snapshot as a model
// parameter; prices enter it in the client's description.
type ModelSpec struct {
	// Provider is "openai" (any OpenAI-compatible Chat Completions server),
	// "anthropic" or "script" (answers from Script, offline).
	Provider        string   `yaml:"provider"`
	Model           string   `yaml:"model"`
	BaseURL         string   `yaml:"base_url"`
	Temperature     *float64 `yaml:"temperature"`
	TopP            *float64 `yaml:"top_p"`
	MaxOutputTokens int      `yaml:"max_output_tokens"`
	Seed            *int64   `yaml:"seed"`
	Stop            []string `yaml:"stop"`
	Retries         int      `yaml:"retries"`
	RetryBackoffMS  int      `yaml:"retry_backoff_ms"`
	// ParallelToolCalls says whether the model may call several tools in
	// one reply (polyloop.ModelParams.ParallelToolCalls: OpenAI's
	// parallel_tool_calls, Anthropic's disable_parallel_tool_use inverted);
	// unset: the provider's default, which allows it.
	ParallelToolCalls *bool `yaml:"parallel_tool_calls"`
	// APIKeyEnv names the environment variable holding the API key
	// (default OPENAI_API_KEY or ANTHROPIC_API_KEY). The key itself never
	// belongs in the file.
	APIKeyEnv string `yaml:"api_key_env"`
	// Script is the scripted model's turns, for provider "script": turn i
	// answers step i+1.
	Script []TurnSpec `yaml:"script"`
	// CostPerToken prices the scripted model's usage (provider "script"
	// only); zero leaves cost unknown.
	CostPerToken float64 `yaml:"cost_per_token"`
	// Prices price the model's tokens (openai and anthropic), by model id:
	// they replace the client's shipped price table, which prices the
	// provider's own API only. The client describes them in the snapshot.
	Prices map[string]PriceSpec `yaml:"prices"`
}

// PriceSpec is one model's price, in US dollars per million tokens.
type PriceSpec struct {
	// Input and Output are required: the price of input tokens (neither
	// read from nor written to a prompt cache) and of output tokens.
	Input  *float64 `yaml:"input"`
	Output *float64 `yaml:"output"`
	// CachedInput prices input tokens read from a prompt cache, CacheWrite
	// those written to one; unset: the input price.
	CachedInput *float64 `yaml:"cached_input"`
	CacheWrite  *float64 `yaml:"cache_write"`
}

// TurnSpec is one scripted answer: text, a tool call, or a failure.
type TurnSpec struct {
	// Text is the reply's text (for a tool call, the text beside it).
	Text string `yaml:"text"`
	// Tool and Args make the turn a native tool call; ID is its call id
	// (default "call_<step>").
	Tool string         `yaml:"tool"`
	Args map[string]any `yaml:"args"`
	ID   string         `yaml:"id"`
	// Fail makes the model call fail with this message (a model-service
	// failure: the run finishes with llm_error).
	Fail string `yaml:"fail"`
	// DelayMS makes the call take that long (it honours cancellation).
	DelayMS int `yaml:"delay_ms"`
}

// ParserSpec chooses the decision parser.
type ParserSpec struct {
	// Kind is "toolcall" (native tool calls, the default), "json" (JSON in
	// the reply's text) or "code" (one fenced code block per reply).
	Kind    string        `yaml:"kind"`
	Options ParserOptions `yaml:"options"`
}

// ParserOptions holds the options of every parser kind; each kind accepts
// only its own (see kindOptions).
type ParserOptions struct {
	// RequireAction (toolcall): a reply without a tool call is Invalid
	// instead of Final.
	RequireAction bool `yaml:"require_action"`
	// Lang, Tags and FinalMarker (code): the action's language, the fence
	// tags that mark an action block, and the line prefix of a final answer.
	Lang        string   `yaml:"lang"`
	Tags        []string `yaml:"tags"`
	FinalMarker string   `yaml:"final_marker"`
	// Ignore and TextIsFinal (json): action-level fields accepted and
	// dropped (such as "thought"), and whether a reply without JSON is the
	// final answer.
	Ignore      []string `yaml:"ignore"`
	TextIsFinal bool     `yaml:"text_is_final"`
	// MaxActionsPerStep (toolcall, json) bounds the actions of one reply
	// (0: no bound); a reply with more is Invalid.
	MaxActionsPerStep int `yaml:"max_actions_per_step"`
	// CheckArgs (toolcall, json) checks each action's arguments against
	// its tool's parameter schema; a mismatch is Invalid, with feedback
	// naming the field. Unset means true.
	CheckArgs *bool `yaml:"check_args"`
}

// ToolsSpec configures the tool sources: a shell, MCP servers, deferred
// tools. A tool name may be offered by only one of them.
type ToolsSpec struct {
	Shell *ShellSpec `yaml:"shell"`
	MCP   []MCPSpec  `yaml:"mcp"`
	// Deferred are tools whose results come from outside (polyloop
	// deliver): the model is shown them, no executor runs them.
	Deferred []DeferredSpec `yaml:"deferred"`
}

// ShellSpec configures the shell executor (package shellexec). With an
// environment section, the shell runs inside the run's environment: Dir is
// then a directory inside it (absolute; default the environment's
// workdir), Shell defaults to sh, EnvAllow is refused (the environment's
// env_allow names what it lets in) and Replay defaults to
// restore_and_replay (never_replay with network allow).
type ShellSpec struct {
	// Dir is the working directory, relative to the agent file's directory;
	// empty means the directory polyloop runs in. Options.ShellDir
	// overrides it.
	Dir string `yaml:"dir"`
	// TimeoutMS bounds each command (default shellexec.DefaultTimeout).
	TimeoutMS   int               `yaml:"timeout_ms"`
	OutputLimit int               `yaml:"output_limit"`
	EnvAllow    []string          `yaml:"env_allow"`
	Env         map[string]string `yaml:"env"`
	// DoneSentinel is the output line that ends the run as completed.
	DoneSentinel string `yaml:"done_sentinel"`
	Shell        string `yaml:"shell"`
	// Replay is the replay policy of the bash tool: never_replay (default),
	// replay_safe, or idempotent (its commands pass on
	// POLYLOOP_IDEMPOTENCY_KEY). Code actions are never replayed.
	Replay string `yaml:"replay"`
	// Reconcile is a command that answers, on resume, whether a shell
	// action of unknown outcome happened: run in the working directory with
	// POLYLOOP_IDEMPOTENCY_KEY, POLYLOOP_RUN_ID, POLYLOOP_ACTION_ID and
	// POLYLOOP_ACTION set, it prints one JSON verdict
	// (docs/agent-file.md, "Reconciliation").
	Reconcile string `yaml:"reconcile"`
	// Approval gates the bash tool's actions behind a person's decision
	// (polyloop approve): "required", or empty for none.
	Approval string `yaml:"approval"`
	// ApprovalDeadline bounds the wait for that decision, from the request:
	// a Go duration ("24h"). After it, a resume denies the action. Empty:
	// no deadline.
	ApprovalDeadline string `yaml:"approval_deadline"`
}

// MCPSpec configures one MCP server (package mcpexec): a command started
// over stdio, or a streamable HTTP URL.
type MCPSpec struct {
	// Name identifies the server in messages. Required.
	Name    string   `yaml:"name"`
	Command string   `yaml:"command"`
	Args    []string `yaml:"args"`
	// Dir is the server's working directory, relative to the agent file.
	Dir string `yaml:"dir"`
	// EnvAllow names host variables passed to a stdio server; Env gives
	// explicit values (no secrets: use EnvAllow for those). A stdio server
	// sees only these, plus PATH and HOME.
	EnvAllow []string          `yaml:"env_allow"`
	Env      map[string]string `yaml:"env"`
	URL      string            `yaml:"url"`
	// HeadersEnv sets HTTP headers on every request to URL, each read from
	// the named environment variable when the file is loaded:
	// {Authorization: MY_MCP_AUTH}. The values never enter the snapshot.
	HeadersEnv map[string]string `yaml:"headers_env"`
	// OAuth authorizes the requests to URL with OAuth 2.1; see OAuthSpec.
	OAuth *OAuthSpec `yaml:"oauth"`
	// Prefix is put before each of the server's tool names, as the model
	// sees them and as the snapshot records them: with prefix fs_, the
	// server's read_file is fs_read_file. It lets two servers offering the
	// same tool name serve one agent. Letters, digits, _ and - only.
	Prefix string `yaml:"prefix"`
	// Tools, when set, exposes only these tools of the server (its own
	// names, without the prefix).
	Tools []string `yaml:"tools"`
	// Replay overrides the server's annotations, per tool (its own names,
	// without the prefix): replay_safe, never_replay or idempotent.
	Replay map[string]string `yaml:"replay"`
	// Reconcile names, per tool, a companion tool of the same server that
	// answers whether a call of unknown outcome happened (its own names,
	// without the prefix): {make_payment: lookup_payment}. The companion is
	// called with {"idempotency_key": K} and answers a JSON verdict
	// (docs/agent-file.md, "Reconciliation").
	Reconcile map[string]string `yaml:"reconcile"`
	// Approval gates tools of the server behind a person's decision, per
	// tool (its own names, without the prefix): {send_email: required}.
	Approval map[string]string `yaml:"approval"`
	// ApprovalDeadline bounds the wait for each of those decisions, as
	// ShellSpec.ApprovalDeadline.
	ApprovalDeadline string `yaml:"approval_deadline"`
	// StartTimeoutMS bounds starting the server: initialize and tools/list
	// (default mcpexec.DefaultStartTimeout).
	StartTimeoutMS int `yaml:"start_timeout_ms"`
	// CallTimeoutMS bounds each tool call; a call not answered by then is
	// env_error (default mcpexec.DefaultCallTimeout).
	CallTimeoutMS int `yaml:"call_timeout_ms"`
}

// DeferredSpec declares a deferred tool (polyloop.ToolSpec.Deferred): the
// model calls it like any tool, the run waits, suspended, and its result is
// delivered from outside (polyloop deliver). No executor runs it.
type DeferredSpec struct {
	// Name is the tool's name, as the model sees it. Required; letters,
	// digits, _ and - only.
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Parameters is the JSON Schema of the tool's arguments, written in
	// YAML: an object schema. Empty: the tool takes no arguments.
	Parameters map[string]any `yaml:"parameters"`
	// Deadline bounds the wait for the delivery, from the request (a Go
	// duration); after it, a resume settles the action env_error. Empty:
	// no deadline.
	Deadline string `yaml:"deadline"`
}

// LimitsSpec bounds a run (zero: no limit).
type LimitsSpec struct {
	MaxSteps         int     `yaml:"max_steps"`
	MaxTokens        int64   `yaml:"max_tokens"`
	MaxCostUSD       float64 `yaml:"max_cost_usd"`
	ObservationLimit int     `yaml:"observation_limit"`
	// TimeLimit bounds the run's wall clock (from its start, a resumed
	// run's time before the resume included); WorkingLimit the time its
	// model calls and actions took (waits for approval excluded). Go
	// durations ("30m", "2h"); the run finishes time_limit or
	// working_limit. Empty: no limit.
	TimeLimit    string `yaml:"time_limit"`
	WorkingLimit string `yaml:"working_limit"`
}

// SyntheticSpec overrides the synthetic observations (defaults
// polyloop.DefaultNotExecuted, DefaultEnvError and DefaultDenied).
type SyntheticSpec struct {
	NotExecuted string `yaml:"not_executed"`
	EnvError    string `yaml:"env_error"`
	// Denied is the text for an action a person denied, or whose approval
	// timed out (default polyloop.DefaultDenied).
	Denied string `yaml:"denied"`
}
