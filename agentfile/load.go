package agentfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/polyloop/polyloop"
)

// Options change how Load builds a Config.
type Options struct {
	// Getenv reads the environment: API keys, env_allow variables and the
	// values of headers_env (nil: os.Getenv).
	Getenv func(string) string
	// ShellDir, when set, replaces tools.shell.dir.
	ShellDir string
	// Connections is how many model calls the Config's remote model client
	// will have under way at once — 1 for one run, a sweep's concurrency
	// (bounded by its provider's max_connections) for a sweep's agent —:
	// its HTTP pool keeps that many connections for reuse
	// (openaimodel.Options.Connections). Zero: the client's default.
	Connections int
	// Progress, when set, is told what Load starts, one line at a time:
	// each MCP server as it starts (its command or URL) and once it is
	// ready. It may be called from several goroutines at once.
	Progress func(line string)
	// Environments makes the provider of an environment backend ("bwrap",
	// "docker") for an agent file with an environment section: Config's
	// Environments, which Runner sets. Nil: the Config has none, and the
	// caller sets Runner.Environments itself.
	Environments func(backend string) (polyloop.EnvProvider, error)
}

func (o *Options) connections() int {
	if o == nil {
		return 0
	}
	return o.Connections
}

func (o *Options) progress(line string) {
	if o != nil && o.Progress != nil {
		o.Progress(line)
	}
}

func (o *Options) getenv(k string) string {
	if o == nil || o.Getenv == nil {
		return os.Getenv(k)
	}
	return o.Getenv(k)
}

// Config is a loaded agent file: the agent definition and the three seams it
// configures. The agent file does not say where runs are stored nor where
// events go: the caller (the CLI) owns the Store and the Sinks, and passes
// them to Runner.
type Config struct {
	// Path is the agent file's path, as given to Load.
	Path string
	// File is the file as decoded and checked.
	File *File
	// Agent is the agent definition: its Tools are those of the configured
	// executors, with the replay policies in force.
	Agent    polyloop.Agent
	Model    polyloop.ModelClient
	Parser   polyloop.DecisionParser
	Executor polyloop.ActionExecutor
	// EnvBackend is the environment section's backend ("" without one);
	// Environments its provider, when Options.Environments made one.
	EnvBackend   string
	Environments polyloop.EnvProvider

	closers []io.Closer
	memory  *memoryParts // the memory section's parts, bound by Runner
}

// Runner returns a polyloop.Runner on the Config's seams, with the caller's
// store and sinks. An agent with memory keeps it in that store (which must
// implement memory.Store and memory.ViewStore, as the SQLite and
// PostgreSQL stores do): Runner binds the agent's memory to it.
func (c *Config) Runner(store polyloop.Store, sinks ...polyloop.EventSink) *polyloop.Runner {
	c.memory.bind(store, sinks)
	return &polyloop.Runner{Model: c.Model, Parser: c.Parser, Executor: c.Executor, Store: store, Sinks: sinks, Environments: c.Environments}
}

// Close releases what the Config holds open: the MCP server sessions (and
// their processes).
func (c *Config) Close() error {
	var errs []error
	for i := len(c.closers) - 1; i >= 0; i-- {
		errs = append(errs, c.closers[i].Close())
	}
	c.closers = nil
	return errors.Join(errs...)
}

// Check reads and checks an agent file without starting anything: syntax,
// limits, unknown and duplicate keys, types, values, secrets, and the system
// prompt file. Every problem is reported, each with its file, line and
// column: the error is an *Error or an ErrorList of them, in file order,
// matching ErrInvalid (and ErrSecret for a secret, ErrLimit for a file over
// a limit). A syntax error or a limit stops the check where it is found.
func Check(name string) (*File, error) {
	c, err := check(name)
	if err == nil {
		err = c.problems.err()
	}
	if err != nil {
		return nil, err
	}
	return c.f, nil
}

// checked is an agent file read and checked: its problems (sorted), and
// whether its model and limits came through the check whole, so that the
// model client can be built to check them further.
type checked struct {
	f        *File
	loc      *locator
	problems ErrorList
	modelOK  bool
}

// check reads and checks a file; a syntax error or a limit is its error.
func check(name string) (*checked, error) {
	d, err := decode(name)
	if err != nil {
		return nil, err
	}
	v := &validator{loc: d.loc, errs: d.errs, skip: d.failed}
	decoded := len(v.errs)
	if !d.secret {
		v.file(d.f)
		v.systemFile(name, d.f)
	}
	modelOK := !d.secret
	for _, p := range d.failed {
		modelOK = modelOK && !p.within(path{"model"}) && !p.within(path{"limits"})
	}
	for _, e := range v.errs[decoded:] { // the checks of values that decoded
		modelOK = modelOK && !strings.HasPrefix(e.Field, "model") && !strings.HasPrefix(e.Field, "limits")
	}
	return &checked{f: d.f, loc: d.loc, problems: v.sorted(), modelOK: modelOK}, nil
}

// Load checks an agent file (see Check) and builds its Config: the model
// client, the parser and the executor, connecting to the MCP servers it
// names (ctx bounds the connections). Close the Config when done.
//
// Every problem found without starting anything is reported at once: those
// of Check, and those of the model client — a key its provider needs, a
// cost budget no price can check (polyloop.ErrUncheckableBudget) — in
// file order. What needs the MCP servers started (the tools they offer,
// named under tools, approval and replay; their schemas) is checked only
// once there are no such problems: an *UncheckedError says so.
func Load(ctx context.Context, name string, opts *Options) (*Config, error) {
	c, err := check(name)
	if err != nil {
		return nil, err
	}
	b := &builder{file: name, f: c.f, loc: c.loc, opts: opts}
	if problems := b.staticProblems(c); len(problems) > 0 {
		return nil, b.unchecked(problems)
	}
	cfg, err := b.build(ctx)
	if err != nil {
		return nil, err
	}
	cfg.Path = name
	return cfg, nil
}

// staticProblems adds to the check's problems those of building the model
// client, when the model and limits came through the check whole.
func (b *builder) staticProblems(c *checked) ErrorList {
	problems := c.problems
	if !c.modelOK {
		return problems
	}
	client, err := b.model()
	errs := []error{err}
	switch {
	case err == nil:
		errs[0] = b.checkBudget(client)
	case b.f.Limits.MaxCostUSD > 0:
		// The client did not build (a key not set): a price needs no
		// key, so the budget is checked now, not after the key is set.
		if pc := b.priceClient(); pc != nil {
			errs = append(errs, b.checkBudget(pc))
		}
	}
	added := false
	for _, err := range errs {
		var e *Error
		if errors.As(err, &e) {
			problems, added = append(problems, e), true
		}
	}
	if added {
		v := validator{errs: problems}
		problems = v.sorted()
	}
	return problems
}

// priceClient is the model client built only to ask it for prices, without
// its API key; nil when it does not build either.
func (b *builder) priceClient() polyloop.ModelClient {
	pb := *b
	pb.priceCheck = true
	client, err := pb.model()
	if err != nil {
		return nil
	}
	return client
}

// UncheckedError is the problems of an agent file that Load found before
// it started the file's MCP servers: what needs them was not checked, and
// will be once these problems are fixed. errors.Is and errors.As reach the
// problems (ErrInvalid, each *Error).
type UncheckedError struct {
	// Err is the problems: an *Error or an ErrorList.
	Err error
	// Servers names the MCP servers not started.
	Servers []string
}

func (e *UncheckedError) Error() string {
	return fmt.Sprintf("%v\n(not checked yet, as it needs the MCP servers %s started: the tools they offer, as named under tools, "+
		"approval and replay, and their schemas; they start once the problems above are fixed)", e.Err, strings.Join(e.Servers, ", "))
}

// Unwrap returns the problems.
func (e *UncheckedError) Unwrap() error { return e.Err }

// unchecked is the error of problems: with the MCP servers it did not start
// named (UncheckedError), when the file has any.
func (b *builder) unchecked(problems ErrorList) error {
	var servers []string
	for _, m := range b.f.Tools.MCP {
		servers = append(servers, fmt.Sprintf("%q", m.Name))
	}
	if len(servers) == 0 {
		return problems.err()
	}
	return &UncheckedError{Err: problems.err(), Servers: servers}
}

// resolve makes p relative to the agent file's directory.
func resolve(agentFile, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(agentFile), p)
}
