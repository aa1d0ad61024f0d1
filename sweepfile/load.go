// Package sweepfile reads sweep files: one YAML file that names the agent
// files, the task file, the epochs, the retry policy, the providers'
// limits and the scorers of a sweep (docs/sweeps.md). A sweep file is
// decoded as strictly as an agent file, by the same decoder and under the
// same limits (agentfile.Decode): every problem is reported at once, each
// at its file, line and column.
package sweepfile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/agentfile"
	"github.com/polyloop/polyloop/sweep"
)

var document = agentfile.Document{
	Noun:      "sweep file",
	Shape:     "a sweep file is a mapping with at least name, agents and tasks (docs/sweeps.md)",
	Fields:    "sweep fields (name, agents, tasks, epochs, retry, scorers, ...)",
	Reference: "docs/sweeps.md",
	TooLarge:  "a sweep file names its agent and task files, it does not hold them",
}

// Kinds are the scorer kinds a sweep file names.
var Kinds = []string{"exact", "includes", "regex", "numeric", "command", "model"}

// Options change how Load builds a sweep.
type Options struct {
	// Agent is passed to agentfile.Load for every agent file, with its
	// Connections set for each (see Concurrency).
	Agent *agentfile.Options
	// Concurrency is how many runs the sweep will run at once, when it is
	// not the file's (polyloop sweep --concurrency, a worker's
	// --concurrency). It sizes each agent's model client: its HTTP pool
	// keeps that many connections, or its provider's max_connections when
	// lower (agentfile.Options.Connections).
	Concurrency int
	// Epochs, when positive, replaces the file's epochs.
	Epochs int
	// Select chooses the tasks of the task file that the sweep runs
	// (sweep.Select); zero: every task.
	Select sweep.Selection
	// KeepEnvironments leaves in place the environment each command
	// scorer ran in (polyloop sweep --keep-environments).
	KeepEnvironments bool
}

// Loaded is a sweep file loaded: the sweep, ready to run, and the agent
// files' configurations, which hold MCP sessions open until Close.
type Loaded struct {
	Path  string
	File  *File
	Sweep *sweep.Sweep
	// Agents are the agent files' paths, as the sweep file resolves them,
	// in its order.
	Agents []string

	configs []*agentfile.Config
}

// Close releases what the agent files hold open.
func (l *Loaded) Close() error {
	var errs []error
	for _, c := range l.configs {
		errs = append(errs, c.Close())
	}
	l.configs = nil
	return errors.Join(errs...)
}

// Check reads and checks a sweep file without loading its agents:
// syntax, limits, unknown and duplicate keys, types and values, each
// problem at its file:line:col (an agentfile.ErrorList, matching
// agentfile.ErrInvalid).
func Check(path string) (*File, error) {
	var f File
	err := agentfile.Decode(path, document, &f, func(c *agentfile.Checker) { check(c, &f) })
	if err != nil {
		return nil, err
	}
	return &f, nil
}

// Load checks a sweep file, loads its agent files (agentfile.Load: each
// checked, its tools started) and builds the sweep. Close the result when
// done.
func Load(ctx context.Context, path string, opts *Options) (*Loaded, error) {
	f, err := Check(path)
	if err != nil {
		return nil, err
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	l := &Loaded{Path: path, File: f}
	def, err := l.definition(ctx, f, opts)
	if err != nil {
		l.Close()
		return nil, err
	}
	def.Origin, _ = json.Marshal(origin{File: absPath(path), Source: string(src)})
	if l.Sweep, err = sweep.New(def); err != nil {
		l.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return l, nil
}

// origin is what the manifest records of a file: its absolute path and
// its text.
type origin struct {
	File   string `json:"file"`
	Source string `json:"source"`
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// rel resolves a path of the sweep file against its directory.
func (l *Loaded) rel(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(l.Path), p)
}

// definition builds the sweep's definition from the file.
func (l *Loaded) definition(ctx context.Context, f *File, opts *Options) (sweep.Definition, error) {
	def := sweep.Definition{Name: f.Name, Tasks: sweep.TaskFile{Path: l.rel(f.Tasks)}, Epochs: f.Epochs, Concurrency: f.Concurrency, MaxScorers: f.MaxScorers,
		MaxEnvironments: f.MaxEnvironments,
		Retry:           sweep.RetryPolicy{Attempts: f.Retry.Attempts, Backoff: ms(f.Retry.BackoffMS), MaxBackoff: ms(f.Retry.MaxBackoffMS)},
		RateLimit:       sweep.Backoff{Initial: ms(f.RateLimit.BackoffMS), Max: ms(f.RateLimit.MaxBackoffMS)},
		Providers:       map[string]sweep.ProviderLimit{}}
	if f.Retry.On != nil {
		def.Retry.On = []polyloop.StopReason{}
		for _, r := range *f.Retry.On {
			def.Retry.On = append(def.Retry.On, polyloop.StopReason(r))
		}
	}
	for k, p := range f.Providers {
		def.Providers[k] = sweep.ProviderLimit{MaxConnections: p.MaxConnections}
	}
	if opts != nil {
		if opts.Epochs > 0 {
			def.Epochs = opts.Epochs
		}
		def.Tasks = sweep.Select(def.Tasks, opts.Select)
		def.KeepEnvironments = opts.KeepEnvironments
	}
	for _, p := range f.Agents {
		a, err := l.agent(ctx, l.rel(p), f, opts)
		if err != nil {
			return def, err
		}
		def.Agents = append(def.Agents, a)
		l.Agents = append(l.Agents, l.rel(p))
	}
	for i, s := range f.Scorers {
		sc, err := l.scorer(ctx, s, f, opts)
		if err != nil {
			return def, fmt.Errorf("%s: scorers[%d]: %w", l.Path, i, err)
		}
		def.Scorers = append(def.Scorers, sc)
	}
	return def, nil
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// agent loads one agent file.
func (l *Loaded) agent(ctx context.Context, path string, f *File, opts *Options) (*sweep.Agent, error) {
	checked, err := agentfile.Check(path)
	if err != nil {
		return nil, err
	}
	provider := providerKey(checked.Model, f.Providers)
	aopts := agentOptions(opts, connections(f, opts, f.Providers[provider]))
	cfg, err := agentfile.Load(ctx, path, aopts)
	if err != nil {
		return nil, err
	}
	l.configs = append(l.configs, cfg)
	timeLimits(&cfg.Agent.Limits, f)
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	o, _ := json.Marshal(origin{File: absPath(path), Source: string(src)})
	return &sweep.Agent{Agent: cfg.Agent, Model: cfg.Model, Parser: cfg.Parser, Executor: cfg.Executor, Provider: provider, Origin: o,
		Environments: cfg.Environments}, nil
}

// providerKey is the key of the providers section that bounds an agent's
// calls: its model.base_url when the section names it, else its provider.
func providerKey(m agentfile.ModelSpec, providers map[string]ProviderSpec) string {
	if _, ok := providers[m.BaseURL]; ok && m.BaseURL != "" {
		return m.BaseURL
	}
	return m.Provider
}

// connections is how many model calls of one agent are under way at once:
// the runs at once (opts.Concurrency, else the file's, else the sweep's
// default), or the provider's max_connections when lower.
func connections(f *File, opts *Options, p ProviderSpec) int {
	n := f.Concurrency
	if opts != nil && opts.Concurrency > 0 {
		n = opts.Concurrency
	}
	if n <= 0 {
		n = sweep.DefaultConcurrency
	}
	if p.MaxConnections > 0 {
		n = min(n, p.MaxConnections)
	}
	return n
}

// agentOptions are the options of agentfile.Load for an agent whose
// client has n calls under way at once.
func agentOptions(opts *Options, n int) *agentfile.Options {
	var o agentfile.Options
	if opts != nil && opts.Agent != nil {
		o = *opts.Agent
	}
	o.Connections = n
	return &o
}

// scorer builds one scorer.
func (l *Loaded) scorer(ctx context.Context, s ScorerSpec, f *File, opts *Options) (sweep.Scorer, error) {
	name := s.Name
	if name == "" {
		name = s.Kind
	}
	match := sweep.MatchOptions{IgnoreCase: s.IgnoreCase}
	switch s.Kind {
	case "exact":
		return sweep.Exact(name, match), nil
	case "includes":
		return sweep.Includes(name, match), nil
	case "regex":
		return sweep.Regex(name, sweep.RegexOptions{Pattern: s.Pattern, MatchOptions: match})
	case "numeric":
		return sweep.Numeric(name, sweep.NumericOptions{Tolerance: s.Tolerance, Relative: s.Relative}), nil
	case "command":
		return sweep.Command(name, sweep.CommandOptions{Args: s.Command, Dir: filepath.Dir(l.Path), Timeout: ms(s.TimeoutMS), EnvAllow: s.EnvAllow})
	case "model":
		g, err := l.agent(ctx, l.rel(s.Agent), f, opts)
		if err != nil {
			return nil, err
		}
		return sweep.ModelGraded(name, sweep.GraderOptions{Grader: g, Template: s.Template, Attempts: s.Attempts}), nil
	}
	return nil, fmt.Errorf("unknown scorer kind %q", s.Kind) // Check refused it
}

// check finds the problems of a decoded sweep file's values.
func check(c *agentfile.Checker, f *File) {
	switch {
	case f.Name == "":
		c.Fail("required: the sweep's name (its run ids start with it)", "name")
	case !sweep.ValidName(f.Name):
		c.Fail("1 to 64 letters, digits, '_' or '-', starting with a letter or digit (the sweep's run ids start with it)", "name")
	}
	if len(f.Agents) == 0 {
		c.Fail("required: at least one agent file", "agents")
	}
	for i, a := range f.Agents {
		if strings.TrimSpace(a) == "" {
			c.Fail("an empty path", "agents", i)
		}
	}
	if f.Tasks == "" {
		c.Fail("required: the task file (.jsonl, .ndjson or .csv)", "tasks")
	} else if ext := strings.ToLower(filepath.Ext(f.Tasks)); ext != ".jsonl" && ext != ".ndjson" && ext != ".csv" {
		c.Fail(fmt.Sprintf("a task file is .jsonl, .ndjson or .csv, not %q", ext), "tasks")
	}
	for _, n := range []struct {
		v   int
		key []any
	}{{f.Epochs, []any{"epochs"}}, {f.Concurrency, []any{"concurrency"}}, {f.MaxScorers, []any{"max_scorers"}}, {f.MaxEnvironments, []any{"max_environments"}}, {f.Retry.Attempts, []any{"retry", "attempts"}},
		{f.Retry.BackoffMS, []any{"retry", "backoff_ms"}}, {f.Retry.MaxBackoffMS, []any{"retry", "max_backoff_ms"}},
		{f.RateLimit.BackoffMS, []any{"rate_limit", "backoff_ms"}}, {f.RateLimit.MaxBackoffMS, []any{"rate_limit", "max_backoff_ms"}}} {
		if n.v < 0 {
			c.Fail("must not be negative", n.key...)
		}
	}
	checkRetry(c, f.Retry)
	checkDuration(c, f.TimeLimit, "time_limit")
	checkDuration(c, f.WorkingLimit, "working_limit")
	for k, p := range f.Providers {
		if p.MaxConnections < 0 {
			c.Fail("must not be negative", "providers", k, "max_connections")
		}
	}
	names := map[string]int{}
	for i, s := range f.Scorers {
		checkScorer(c, i, s)
		name := s.Name
		if name == "" {
			name = s.Kind
		}
		if first, dup := names[name]; dup {
			c.Fail(fmt.Sprintf("the scorer name %q is taken by scorers[%d]: give each scorer its own name", name, first), "scorers", i)
		}
		names[name] = i
	}
}

// checkDuration checks a time limit: empty, or a positive Go duration.
func checkDuration(c *agentfile.Checker, s, key string) {
	if s == "" {
		return
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		c.Fail(fmt.Sprintf("expected a duration such as 30m, 2h or 90s (units ns, us, ms, s, m, h), found %q", s), key)
	case d <= 0:
		c.Fail(fmt.Sprintf("expected a positive duration, found %q", s), key)
	}
}

// timeLimits puts the sweep file's time limits, where it sets them, in an
// agent's limits (checked by checkDuration).
func timeLimits(l *polyloop.Limits, f *File) {
	if f.TimeLimit != "" {
		l.TimeLimit, _ = time.ParseDuration(f.TimeLimit)
	}
	if f.WorkingLimit != "" {
		l.WorkingLimit, _ = time.ParseDuration(f.WorkingLimit)
	}
}

func checkRetry(c *agentfile.Checker, r RetrySpec) {
	if r.On == nil {
		return
	}
	for i, s := range *r.On {
		reason := polyloop.StopReason(s)
		switch {
		case reason == polyloop.StopCompleted:
			c.Fail("a completed run is never retried", "retry", "on", i)
		case !reason.Valid():
			c.Fail(fmt.Sprintf("%q is not a stop reason (max_steps, token_budget, cost_budget, time_limit, working_limit, llm_error, env_error, resume_state_unknown)", s), "retry", "on", i)
		}
	}
}

// checkScorer checks one scorer's kind and that it is given only its
// kind's options.
func checkScorer(c *agentfile.Checker, i int, s ScorerSpec) {
	if !slices.Contains(Kinds, s.Kind) {
		c.Fail(fmt.Sprintf("kind %q: expected one of %s", s.Kind, strings.Join(Kinds, ", ")), "scorers", i, "kind")
		return
	}
	if s.Name != "" && !sweep.ValidName(s.Name) {
		c.Fail("1 to 64 letters, digits, '_' or '-'", "scorers", i, "name")
	}
	given := map[string]bool{"ignore_case": s.IgnoreCase, "pattern": s.Pattern != "", "tolerance": s.Tolerance != 0,
		"relative": s.Relative != 0, "command": len(s.Command) > 0, "timeout_ms": s.TimeoutMS != 0, "agent": s.Agent != "",
		"template": s.Template != "", "attempts": s.Attempts != 0, "env_allow": len(s.EnvAllow) > 0}
	takes := map[string][]string{"exact": {"ignore_case"}, "includes": {"ignore_case"}, "regex": {"ignore_case", "pattern"},
		"numeric": {"tolerance", "relative"}, "command": {"command", "timeout_ms", "env_allow"}, "model": {"agent", "template", "attempts"}}
	for _, key := range []string{"ignore_case", "pattern", "tolerance", "relative", "command", "timeout_ms", "env_allow", "agent", "template", "attempts"} {
		if given[key] && !slices.Contains(takes[s.Kind], key) {
			c.Fail(fmt.Sprintf("%s is not an option of %s scorer (its options: %s)", key, article(s.Kind), strings.Join(takes[s.Kind], ", ")), "scorers", i, key)
		}
	}
	if s.Kind == "regex" && s.Pattern != "" {
		if _, err := regexp.Compile(s.Pattern); err != nil {
			c.Fail(fmt.Sprintf("not a regular expression (RE2 syntax): %v", err), "scorers", i, "pattern")
		}
	}
	required := map[string]string{"regex": "pattern", "command": "command", "model": "agent"}
	if key, ok := required[s.Kind]; ok && !given[key] {
		c.Fail(fmt.Sprintf("%s scorer needs %s", article(s.Kind), key), "scorers", i, key)
	}
	if s.Tolerance < 0 || s.Relative < 0 || s.TimeoutMS < 0 || s.Attempts < 0 {
		c.Fail("options must not be negative", "scorers", i)
	}
}

// article puts "a" or "an" before a scorer kind.
func article(kind string) string {
	if strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}
