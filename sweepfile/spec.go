package sweepfile

// File is a sweep file as written: the YAML document decoded strictly
// (unknown keys are errors). docs/sweeps.md documents every key.
type File struct {
	// Name names the sweep: its run ids start with it. Required.
	Name string `yaml:"name"`
	// Agents are agent files, relative to the sweep file. At least one.
	Agents []string `yaml:"agents"`
	// Tasks is the task file (.jsonl, .ndjson or .csv), relative to the
	// sweep file. Required.
	Tasks string `yaml:"tasks"`
	// Epochs is how many runs each agent makes of each task (default 1).
	Epochs int `yaml:"epochs"`
	// Concurrency is how many runs go at once (default 4; the command's
	// --concurrency overrides it).
	Concurrency int `yaml:"concurrency"`
	// MaxScorers bounds the command scorers running at once in one
	// process (default: the number of CPUs).
	MaxScorers int `yaml:"max_scorers"`
	// MaxEnvironments bounds the environments (sandboxes, containers) the
	// sweep's runs and command scorers hold at once in one process, apart
	// from concurrency (default: no bound but concurrency).
	MaxEnvironments int       `yaml:"max_environments"`
	Retry           RetrySpec `yaml:"retry"`
	// TimeLimit and WorkingLimit (Go durations: "10m", "1h") bound each
	// run of the sweep, replacing the agent files' limits.time_limit and
	// limits.working_limit: the wall clock of a run, and the time its
	// model calls and actions took (waits for approval excluded). The run
	// then finishes time_limit or working_limit. Empty: the agent file's.
	TimeLimit    string `yaml:"time_limit"`
	WorkingLimit string `yaml:"working_limit"`
	// Providers bound the model calls by provider: a key is a provider
	// name (openai, anthropic, script) or a model.base_url, which takes
	// precedence for the agents that set it.
	Providers map[string]ProviderSpec `yaml:"providers"`
	// RateLimit is the shared pause of a provider's calls after a 429.
	RateLimit BackoffSpec `yaml:"rate_limit"`
	// Scorers score the finished runs; the first is the one accuracy
	// reports by default.
	Scorers []ScorerSpec `yaml:"scorers"`
}

// RetrySpec is the retry policy: runs that finish with a stop reason in
// On are retried as new runs.
type RetrySpec struct {
	// On lists the stop reasons retried (default [llm_error]; [] for
	// none).
	On *[]string `yaml:"on"`
	// Attempts bounds the attempts at one task and epoch, the first
	// included (default 3).
	Attempts int `yaml:"attempts"`
	// BackoffMS is the pause before the second attempt (default 1000),
	// doubled for each later one up to MaxBackoffMS (default 60000).
	BackoffMS    int `yaml:"backoff_ms"`
	MaxBackoffMS int `yaml:"max_backoff_ms"`
}

// ProviderSpec bounds one provider's calls.
type ProviderSpec struct {
	// MaxConnections is how many calls may be under way at once.
	MaxConnections int `yaml:"max_connections"`
}

// BackoffSpec is the pause after a 429: BackoffMS (default 1000) at the
// first, doubled at each further one up to MaxBackoffMS (default 60000).
type BackoffSpec struct {
	BackoffMS    int `yaml:"backoff_ms"`
	MaxBackoffMS int `yaml:"max_backoff_ms"`
}

// ScorerSpec is one scorer. Kind says which (exact, includes, regex,
// numeric, command, model); the other keys are the options of the kinds
// that take them.
type ScorerSpec struct {
	// Name names the scorer's scores (default: its kind). Unique.
	Name string `yaml:"name"`
	Kind string `yaml:"kind"`
	// IgnoreCase (exact, includes, regex) compares without case.
	IgnoreCase bool `yaml:"ignore_case"`
	// Pattern (regex) is searched in the answer (RE2 syntax).
	Pattern string `yaml:"pattern"`
	// Tolerance and Relative (numeric) are the absolute and relative
	// differences allowed.
	Tolerance float64 `yaml:"tolerance"`
	Relative  float64 `yaml:"relative"`
	// Command (command) is the program and its arguments, run in the sweep
	// file's directory; TimeoutMS bounds one scoring (default 60000).
	Command   []string `yaml:"command"`
	TimeoutMS int      `yaml:"timeout_ms"`
	// EnvAllow (command) names the host variables the command gets
	// besides the shell tool's scrubbed environment (PATH, HOME, LANG).
	EnvAllow []string `yaml:"env_allow"`
	// Agent (model) is the grader's agent file, relative to the sweep
	// file; Template the grading task ({input}, {target}, {answer});
	// Attempts the grading runs of one answer (default 3).
	Agent    string `yaml:"agent"`
	Template string `yaml:"template"`
	Attempts int    `yaml:"attempts"`
}
