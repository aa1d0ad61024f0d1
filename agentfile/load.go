package agentfile

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"

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
}

func (o *Options) connections() int {
	if o == nil {
		return 0
	}
	return o.Connections
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

	closers []io.Closer
	memory  *memoryParts // the memory section's parts, bound by Runner
}

// Runner returns a polyloop.Runner on the Config's seams, with the caller's
// store and sinks. An agent with memory keeps it in that store (which must
// implement memory.Store and memory.ViewStore, as the SQLite and
// PostgreSQL stores do): Runner binds the agent's memory to it.
func (c *Config) Runner(store polyloop.Store, sinks ...polyloop.EventSink) *polyloop.Runner {
	c.memory.bind(store, sinks)
	return &polyloop.Runner{Model: c.Model, Parser: c.Parser, Executor: c.Executor, Store: store, Sinks: sinks}
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
	f, _, err := check(name)
	return f, err
}

func check(name string) (*File, *locator, error) {
	d, err := decode(name)
	if err != nil {
		return nil, nil, err
	}
	v := &validator{loc: d.loc, errs: d.errs, skip: d.failed}
	if !d.secret {
		v.file(d.f)
		v.systemFile(name, d.f)
	}
	if err := v.sorted().err(); err != nil {
		return nil, nil, err
	}
	return d.f, d.loc, nil
}

// Load checks an agent file (see Check) and builds its Config: the model
// client, the parser and the executor, connecting to the MCP servers it
// names (ctx bounds the connections). Close the Config when done.
func Load(ctx context.Context, name string, opts *Options) (*Config, error) {
	f, loc, err := check(name)
	if err != nil {
		return nil, err
	}
	b := &builder{file: name, f: f, loc: loc, opts: opts}
	cfg, err := b.build(ctx)
	if err != nil {
		return nil, err
	}
	cfg.Path = name
	return cfg, nil
}

// resolve makes p relative to the agent file's directory.
func resolve(agentFile, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(agentFile), p)
}
