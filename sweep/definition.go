package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/polyloop/polyloop"
)

// ErrInvalid marks a Definition that New refuses.
var ErrInvalid = errors.New("sweep: invalid definition")

// Agent is one agent of a sweep: the agent and the seams its runs use.
type Agent struct {
	Agent    polyloop.Agent
	Model    polyloop.ModelClient
	Parser   polyloop.DecisionParser
	Executor polyloop.ActionExecutor
	// Provider keys the connection limit and the shared rate-limit pause
	// of the agent's model calls (Definition.Providers): agents with the
	// same key share them. Empty: the agent's Model.Provider.
	Provider string
	// Origin says where the agent comes from (its agent file), as JSON
	// kept in the sweep's manifest; nil for none.
	Origin json.RawMessage
	// Environments creates the environments of an agent with one
	// (polyloop.Agent.Environment): each run of the sweep gets its own
	// (polyloop.Runner.Environments).
	Environments polyloop.EnvProvider

	hash  string
	model polyloop.ModelClient // Model behind the provider's gate
}

// Hash is the agent's snapshot hash: the hash of the snapshot its runs
// would record for an empty task. Set by New.
func (a *Agent) Hash() string { return a.hash }

// provider is the agent's provider key.
func (a *Agent) provider() string {
	if a.Provider != "" {
		return a.Provider
	}
	if a.Agent.Model.Provider != "" {
		return a.Agent.Model.Provider
	}
	return "default"
}

// runner is a Runner on the agent's seams and store.
func (a *Agent) runner(store polyloop.Store) *polyloop.Runner {
	return &polyloop.Runner{Model: a.model, Parser: a.Parser, Executor: a.Executor, Store: store, Environments: a.Environments}
}

// RetryPolicy says which runs a sweep runs again, as new runs: a run that
// finishes with a stop reason in On is followed by another attempt at the
// same task and epoch, after a pause that doubles with each attempt, until
// an attempt ends otherwise or Attempts attempts were made. The earlier
// attempts stay in the store and in the statistics.
type RetryPolicy struct {
	// On lists the stop reasons retried (default DefaultRetryOn).
	On []polyloop.StopReason `json:"on"`
	// Attempts bounds the attempts at one task and epoch, the first one
	// included (default DefaultAttempts; 1: no retry).
	Attempts int `json:"attempts"`
	// Backoff is the pause before the second attempt (default
	// DefaultRetryBackoff); each later attempt waits twice the pause of
	// the one before, at most MaxBackoff (default DefaultRetryMaxBackoff).
	Backoff    time.Duration `json:"backoff_ns"`
	MaxBackoff time.Duration `json:"max_backoff_ns"`
}

// Defaults of RetryPolicy.
const (
	DefaultAttempts        = 3
	DefaultRetryBackoff    = time.Second
	DefaultRetryMaxBackoff = time.Minute
)

// DefaultRetryOn are the stop reasons retried by default: a failure of the
// model service.
var DefaultRetryOn = []polyloop.StopReason{polyloop.StopLLMError}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.On == nil {
		p.On = DefaultRetryOn
	}
	if p.Attempts <= 0 {
		p.Attempts = DefaultAttempts
	}
	if p.Backoff <= 0 {
		p.Backoff = DefaultRetryBackoff
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = DefaultRetryMaxBackoff
	}
	p.MaxBackoff = max(p.MaxBackoff, p.Backoff)
	return p
}

// Retried reports whether a run that finished with reason is retried
// (when attempts remain).
func (p RetryPolicy) Retried(reason polyloop.StopReason) bool { return slices.Contains(p.On, reason) }

// delay is the pause before attempt (2 or more).
func (p RetryPolicy) delay(attempt int) time.Duration {
	d := p.Backoff
	for i := 2; i < attempt && d < p.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, p.MaxBackoff)
}

// Definition is a sweep as its author gives it: agents × tasks × epochs,
// how runs are retried and scored, and how model calls are limited.
type Definition struct {
	// Name names the sweep (ValidName): its run ids start with it.
	Name   string
	Agents []*Agent
	Tasks  TaskSource
	// Epochs is how many runs each agent makes of each task (default 1).
	Epochs  int
	Retry   RetryPolicy
	Scorers []Scorer
	// Concurrency is how many runs go at once (default
	// DefaultConcurrency); RunOptions.Concurrency overrides it.
	Concurrency int
	// MaxScorers bounds the command scorers running at once in this
	// process, apart from Concurrency (default runtime.NumCPU()): a
	// scoring program competes for the machine, and its timeout counts
	// from when it starts, not while it waits for a slot.
	MaxScorers int
	// MaxEnvironments bounds the environments the sweep's runs and
	// command scorers hold at once in this process, apart from
	// Concurrency (a run holds one while it runs; a command scorer of a
	// run with an environment holds one while it scores). Zero: no bound
	// but Concurrency.
	MaxEnvironments int
	// KeepEnvironments leaves the environment a command scorer ran in
	// (the run's last snapshot) in place after scoring, for people to
	// look at; pruned by label once its driver is gone.
	KeepEnvironments bool
	// Providers bound the model calls by provider key (Agent.Provider).
	Providers map[string]ProviderLimit
	// RateLimit is the shared pause after a 429 (Backoff's defaults when
	// zero).
	RateLimit Backoff
	// Origin is what the sweep's builder records to rebuild the sweep
	// elsewhere (for a sweep file: its path and content), as JSON kept in
	// the manifest; nil for none.
	Origin json.RawMessage
}

// DefaultConcurrency is how many runs a sweep runs at once by default.
const DefaultConcurrency = 4

// validate says what is wrong with a definition.
func (d *Definition) validate() error {
	var errs []string
	if !ValidName(d.Name) {
		errs = append(errs, fmt.Sprintf("name %q: 1 to 64 letters, digits, '_' or '-', starting with a letter or digit", d.Name))
	}
	if len(d.Agents) == 0 {
		errs = append(errs, "no agents")
	}
	if d.Tasks == nil {
		errs = append(errs, "no tasks")
	}
	if d.Epochs < 0 || d.Concurrency < 0 || d.Retry.Attempts < 0 || d.MaxScorers < 0 || d.MaxEnvironments < 0 {
		errs = append(errs, "epochs, concurrency, max scorers, max environments and retry attempts must not be negative")
	}
	for _, r := range d.Retry.On {
		if !r.Valid() {
			errs = append(errs, fmt.Sprintf("retry on %q: not a stop reason", r))
		}
		if r == polyloop.StopCompleted {
			errs = append(errs, "retry on completed: a completed run is never retried")
		}
	}
	seen := map[string]bool{}
	for _, sc := range d.Scorers {
		if sc == nil || sc.Name() == "" || seen[sc.Name()] {
			errs = append(errs, "every scorer needs a name of its own")
			break
		}
		seen[sc.Name()] = true
	}
	for i, a := range d.Agents {
		if a == nil || a.Model == nil || a.Parser == nil || a.Executor == nil {
			errs = append(errs, fmt.Sprintf("agents[%d]: needs a model client, a parser and an executor", i))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(errs, "; "))
	}
	return nil
}
