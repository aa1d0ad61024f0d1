package agentfile

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/anthropicmodel"
	"github.com/polyloop/polyloop/codeparser"
	"github.com/polyloop/polyloop/jsonparser"
	"github.com/polyloop/polyloop/mcpexec"
	"github.com/polyloop/polyloop/openaimodel"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/shellexec"
	"github.com/polyloop/polyloop/toolcallparser"
)

// builder turns a checked File into a Config.
type builder struct {
	file string
	f    *File
	loc  *locator
	opts *Options
	// priceCheck builds a client only to ask it for prices
	// (priceClient): without its API key, which a price does not need.
	priceCheck bool
}

func (b *builder) build(ctx context.Context) (*Config, error) {
	cfg := &Config{File: b.f}
	var err error
	if cfg.Model, err = b.model(); err != nil {
		return nil, err
	}
	if err := b.checkBudget(cfg.Model); err != nil {
		return nil, err
	}
	if b.f.Memory != nil {
		if cfg.memory, err = b.memoryParts(); err != nil {
			return nil, err
		}
	}
	tools, err := b.executor(ctx, cfg)
	if err != nil {
		cfg.Close()
		return nil, err
	}
	if cfg.Parser, err = b.parser(tools); err != nil {
		cfg.Close()
		return nil, err
	}
	cfg.Agent = polyloop.Agent{
		Name:   b.f.Name,
		System: b.f.System,
		Tools:  tools,
		Synthetic: polyloop.SyntheticObservations{
			NotExecuted: b.f.Synthetic.NotExecuted,
			EnvError:    b.f.Synthetic.EnvError,
			Denied:      b.f.Synthetic.Denied,
		},
		Limits: polyloop.Limits{
			MaxSteps:         b.f.Limits.MaxSteps,
			MaxTokens:        b.f.Limits.MaxTokens,
			MaxCostUSD:       b.f.Limits.MaxCostUSD,
			ObservationLimit: b.f.Limits.ObservationLimit,
			TimeLimit:        mustDuration(b.f.Limits.TimeLimit),
			WorkingLimit:     mustDuration(b.f.Limits.WorkingLimit),
		},
		Model:           b.modelParams(),
		ParallelActions: b.f.ParallelActions,
	}
	if b.f.Memory != nil {
		if cfg.Agent.Memory, err = b.agentMemory(cfg); err != nil {
			cfg.Close()
			return nil, err
		}
	}
	if e := b.f.Environment; e != nil {
		if cfg.Agent.Environment, err = b.envSpec(); err != nil {
			cfg.Close()
			return nil, err
		}
		cfg.EnvBackend = e.Backend
		if b.opts != nil && b.opts.Environments != nil {
			if cfg.Environments, err = b.opts.Environments(e.Backend); err != nil {
				cfg.Close()
				return nil, b.loc.errorAt(path{"environment", "backend"}, fmt.Sprintf("the %s backend is not available here: %v", e.Backend, err))
			}
		}
	}
	return cfg, nil
}

// modelParams are the model parameters that enter the snapshot. For a
// scripted model the script's hash is among them: the script is what the
// model says.
func (b *builder) modelParams() polyloop.ModelParams {
	m := b.f.Model
	p := polyloop.ModelParams{
		Provider: m.Provider, Model: m.Model, Temperature: m.Temperature, TopP: m.TopP,
		MaxOutputTokens: m.MaxOutputTokens, Seed: m.Seed, Stop: m.Stop,
		Retries: m.Retries, RetryBackoffMS: m.RetryBackoffMS, ParallelToolCalls: m.ParallelToolCalls,
	}
	if m.Provider == "script" {
		raw, _ := json.Marshal(struct {
			Script       []TurnSpec `json:"script"`
			CostPerToken float64    `json:"cost_per_token"`
		}{m.Script, m.CostPerToken})
		sum := sha256.Sum256(raw)
		p.Extra = map[string]any{"script_sha256": hex.EncodeToString(sum[:])}
		if p.Model == "" {
			p.Model = "script"
		}
	}
	return p
}

func (b *builder) model() (polyloop.ModelClient, error) {
	m := b.f.Model
	switch m.Provider {
	case "script":
		return b.script()
	case "openai":
		return b.remote("OPENAI_API_KEY", func(key string) (polyloop.ModelClient, error) {
			return openaimodel.New(openaimodel.Options{APIKey: key, BaseURL: m.BaseURL, Model: m.Model, Prices: b.priceTable(),
				Connections: b.opts.connections()})
		})
	case "anthropic":
		return b.remote("ANTHROPIC_API_KEY", func(key string) (polyloop.ModelClient, error) {
			return anthropicmodel.New(anthropicmodel.Options{APIKey: key, BaseURL: m.BaseURL, Model: m.Model, Prices: b.priceTable(),
				Connections: b.opts.connections()})
		})
	}
	return nil, b.loc.errorAt(path{"model", "provider"}, fmt.Sprintf("provider %s is not available in this build of polyloop", m.Provider))
}

// remote builds a provider's client with the key from the environment
// variable api_key_env names, or from defEnv. A variable api_key_env names
// must be set: the client would otherwise read defEnv's key.
func (b *builder) remote(defEnv string, build func(key string) (polyloop.ModelClient, error)) (polyloop.ModelClient, error) {
	env := keyEnv(b.f.Model.APIKeyEnv, defEnv)
	key := b.opts.getenv(env)
	if key == "" && b.priceCheck {
		key = "unset: prices only"
	}
	if key == "" && b.f.Model.APIKeyEnv != "" {
		return nil, b.keyNotSet(env)
	}
	client, err := build(key)
	if err != nil {
		return nil, b.modelError(err, env)
	}
	return client, nil
}

func keyEnv(named, def string) string {
	if named != "" {
		return named
	}
	return def
}

func (b *builder) script() (polyloop.ModelClient, error) {
	m := b.f.Model
	turns, err := b.turns(m.Script, path{"model", "script"})
	if err != nil {
		return nil, err
	}
	model := m.Model
	if model == "" {
		model = "script"
	}
	return scriptmodel.NewWithOptions(scriptmodel.Options{CostPerToken: m.CostPerToken, Model: model}, turns...), nil
}

// turns converts scripted turns; p is where they are in the file.
func (b *builder) turns(script []TurnSpec, p path) ([]scriptmodel.Turn, error) {
	turns := make([]scriptmodel.Turn, len(script))
	for i, t := range script {
		turn := scriptmodel.Turn{Text: t.Text, Delay: time.Duration(t.DelayMS) * time.Millisecond}
		if t.Fail != "" {
			turn.Err = errors.New(t.Fail)
		}
		if t.Tool != "" {
			args, err := toJSON(t.Args)
			if err != nil {
				return nil, b.loc.errorAt(p.at(i, "args"), fmt.Sprintf("expected a mapping that converts to a JSON object: %v", err))
			}
			id := t.ID
			if id == "" {
				id = fmt.Sprintf("call_%d", i+1)
			}
			turn.ToolCalls = []polyloop.ToolCall{{ID: id, Name: t.Tool, Args: args}}
		}
		turns[i] = turn
	}
	return turns, nil
}

// toJSON converts decoded YAML (whose nested mappings may have non-string
// keys) into a JSON object.
func toJSON(args map[string]any) (json.RawMessage, error) {
	if args == nil {
		return json.RawMessage("{}"), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // commands hold &&, < and >: keep them readable
	if err := enc.Encode(jsonValue(args)); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func jsonValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = jsonValue(x)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[fmt.Sprint(k)] = jsonValue(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = jsonValue(x)
		}
		return out
	}
	return v
}

func (b *builder) parser(tools []polyloop.ToolSpec) (polyloop.DecisionParser, error) {
	o := b.f.Parser.Options
	switch b.f.Parser.Kind {
	case "", "toolcall":
		return toolcallparser.New(toolcallparser.Options{RequireAction: o.RequireAction, MaxActionsPerStep: o.MaxActionsPerStep,
			Tools: tools, SkipArgCheck: !checkArgs(o)}), nil
	case "json":
		return jsonparser.New(jsonparser.Options{Tools: tools, Ignore: o.Ignore, TextIsFinal: o.TextIsFinal,
			MaxActionsPerStep: o.MaxActionsPerStep, SkipArgCheck: !checkArgs(o)}), nil
	case "code":
		return codeparser.New(codeparser.Options{Lang: o.Lang, Tags: o.Tags, FinalMarker: o.FinalMarker}), nil
	}
	return nil, b.loc.errorAt(path{"parser", "kind"}, fmt.Sprintf("parser kind %s is not available in this build of polyloop", b.f.Parser.Kind))
}

// checkArgs is parser.options.check_args, true when unset: the parser
// checks arguments against the tools' schemas, which the executors would
// refuse anyway, but with feedback that names the field.
func checkArgs(o ParserOptions) bool { return o.CheckArgs == nil || *o.CheckArgs }

// executor builds the executors and returns the agent's tool specs, with
// the file's gates. With exactly one executor and no gate it is used as is;
// otherwise a router hands each action to the executor that offers its tool.
func (b *builder) executor(ctx context.Context, cfg *Config) ([]polyloop.ToolSpec, error) {
	r := &router{owners: map[string]polyloop.ActionExecutor{}}
	var specs []polyloop.ToolSpec
	add := func(name string, p path, exec polyloop.ActionExecutor, tools []polyloop.ToolSpec) error {
		for _, t := range tools {
			if _, dup := r.owners[t.Name]; dup {
				return b.loc.errorAt(p, fmt.Sprintf("tool %q is offered by two tool sources; tool names must be unique: %s", t.Name, clashHint(name)))
			}
			r.owners[t.Name] = exec
		}
		r.parts = append(r.parts, routed{name: name, exec: exec})
		specs = append(specs, tools...)
		return nil
	}
	if s := b.f.Tools.Shell; s != nil {
		sh, err := b.shell(*s)
		if err != nil {
			return nil, err
		}
		r.code = sh
		tools := sh.ToolSpecs()
		shellGates(*s, tools)
		if err := add("shell", path{"tools", "shell"}, sh, tools); err != nil {
			return nil, err
		}
	}
	servers, err := b.startMCP(ctx)
	for _, ex := range servers {
		if ex != nil {
			cfg.closers = append(cfg.closers, ex)
		}
	}
	if err != nil {
		return nil, err
	}
	for i, m := range b.f.Tools.MCP {
		p := path{"tools", "mcp", i}
		ex := servers[i]
		tools := ex.ToolSpecs()
		if err := b.mcpGates(p, m, tools); err != nil {
			return nil, err
		}
		if err := add("mcp:"+m.Name, p, ex, tools); err != nil {
			return nil, err
		}
	}
	if d := b.f.Tools.Deferred; len(d) > 0 {
		if err := add("deferred", path{"tools", "deferred"}, deferredExec{}, deferredTools(d)); err != nil {
			return nil, err
		}
	}
	if m := b.f.Memory; m != nil && m.Tools {
		ex, err := b.memoryTools(cfg.memory)
		if err != nil {
			return nil, err
		}
		if err := add("memory", path{"memory", "tools"}, ex, ex.ToolSpecs()); err != nil {
			return nil, err
		}
	}
	r.specs = specs
	cfg.Executor = r
	// A lone source is used as is, so that its description (in the
	// snapshot) is its own; gated tools need the router, whose tool list
	// carries the gates.
	if len(r.parts) == 1 && !b.f.gated() {
		cfg.Executor = r.parts[0].exec
	}
	return specs, nil
}

// startMCP starts the file's MCP servers, or connects to them, all at
// once — but those with oauth one after another, after the others, since
// an authorization may need a person and listens on its redirect URL — and
// returns them in file order. It reports each start (Options.Progress). A
// server that cannot start is an error of its own; the error is every such
// server's, in file order, and the servers that did start are returned for
// closing.
func (b *builder) startMCP(ctx context.Context) ([]*mcpexec.Executor, error) {
	specs := b.f.Tools.MCP
	servers := make([]*mcpexec.Executor, len(specs))
	errs := make([]error, len(specs))
	announce := func(m MCPSpec) { b.opts.progress(fmt.Sprintf("starting MCP server %q: %s", m.Name, serverWhat(m))) }
	start := func(i int) {
		m := specs[i]
		began := time.Now()
		servers[i], errs[i] = b.mcp(ctx, path{"tools", "mcp", i}, m)
		if errs[i] == nil {
			b.opts.progress(fmt.Sprintf("MCP server %q ready: %d tools, in %s", m.Name, len(servers[i].ToolSpecs()), time.Since(began).Round(time.Millisecond)))
		}
	}
	var wg sync.WaitGroup
	for i, m := range specs {
		if m.OAuth == nil {
			announce(m) // in file order
			wg.Go(func() { start(i) })
		}
	}
	wg.Wait()
	for i, m := range specs {
		if m.OAuth != nil && ctx.Err() == nil {
			announce(m)
			start(i)
		}
	}
	return servers, startErrors(errs)
}

// startErrors joins the servers' start errors: the agent file's problems
// as one ErrorList, an interruption as itself.
func startErrors(errs []error) error {
	var list ErrorList
	for _, err := range errs {
		var e *Error
		switch {
		case err == nil:
		case errors.As(err, &e):
			list = append(list, e)
		default:
			return err // an interruption, not a fault of the file
		}
	}
	return list.err()
}

// serverWhat says what a server is: its command line, or its URL.
func serverWhat(m MCPSpec) string {
	if m.Command == "" {
		return m.URL
	}
	return strings.Join(append([]string{m.Command}, m.Args...), " ")
}

// clashHint says how to resolve a tool name offered twice, the second time
// by the source named name ("mcp:NAME" for a server): a server's tools can
// be renamed with a prefix, or narrowed to a subset.
func clashHint(name string) string {
	server, ok := strings.CutPrefix(name, "mcp:")
	if !ok {
		return "give the MCP server offering it a prefix (prefix: fs_) or expose a subset of its tools (tools:)"
	}
	prefix := server + "_"
	if !toolPrefix.MatchString(prefix) {
		prefix = "fs_"
	}
	return fmt.Sprintf("give this server a prefix (prefix: %s makes its tools %s<name>) or expose a subset of its tools (tools:)", prefix, prefix)
}

func (b *builder) shell(s ShellSpec) (*shellexec.Executor, error) {
	if b.f.Environment != nil {
		return b.shellInEnv(s)
	}
	dir := resolve(b.file, s.Dir)
	if b.opts != nil && b.opts.ShellDir != "" {
		dir = b.opts.ShellDir
	}
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("agentfile: shell working directory: %w", err)
		}
		dir = wd
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, b.loc.errorAt(path{"tools", "shell", "dir"}, fmt.Sprintf("cannot create the working directory: %v", err))
	}
	ex, err := shellexec.New(shellexec.Options{
		Dir: dir, Timeout: time.Duration(s.TimeoutMS) * time.Millisecond, OutputLimit: s.OutputLimit,
		EnvAllow: s.EnvAllow, Env: s.Env, DoneSentinel: s.DoneSentinel, Shell: s.Shell,
		ToolReplay: polyloop.ReplayPolicy(s.Replay), Reconcile: s.Reconcile,
	})
	if err != nil {
		return nil, b.loc.errorAt(path{"tools", "shell"}, fmt.Sprintf("cannot set up the shell: %v", err))
	}
	return ex, nil
}

// shellInEnv is the shell of an agent with an environment: its commands
// run inside the run's environment.
func (b *builder) shellInEnv(s ShellSpec) (*shellexec.Executor, error) {
	replay := polyloop.ReplayPolicy(s.Replay)
	if replay == "" && b.f.Environment.Network == "allow" {
		replay = polyloop.NeverReplay
	}
	ex, err := shellexec.New(shellexec.Options{
		InEnvironment: true, Dir: s.Dir, Timeout: time.Duration(s.TimeoutMS) * time.Millisecond, OutputLimit: s.OutputLimit,
		Env: s.Env, DoneSentinel: s.DoneSentinel, Shell: s.Shell, ToolReplay: replay,
	})
	if err != nil {
		return nil, b.loc.errorAt(path{"tools", "shell"}, fmt.Sprintf("cannot set up the shell: %v", err))
	}
	return ex, nil
}

func (b *builder) mcp(ctx context.Context, p path, m MCPSpec) (*mcpexec.Executor, error) {
	opts := mcpexec.Options{URL: m.URL, Tools: m.Tools, Prefix: m.Prefix, Reconcile: m.Reconcile,
		StartTimeout: time.Duration(m.StartTimeoutMS) * time.Millisecond, CallTimeout: time.Duration(m.CallTimeoutMS) * time.Millisecond}
	if len(m.Replay) > 0 {
		opts.Replay = make(map[string]polyloop.ReplayPolicy, len(m.Replay))
		for tool, policy := range m.Replay {
			opts.Replay[tool] = polyloop.ReplayPolicy(policy)
		}
	}
	if m.Command != "" {
		opts.Command = append([]string{m.Command}, m.Args...)
		opts.Dir = resolve(b.file, m.Dir)
		opts.Env = b.serverEnv(m)
	}
	headers, err := b.headers(p, m)
	if err != nil {
		return nil, err
	}
	opts.Headers = headers
	if opts.OAuthHandler, err = b.oauth(p, m); err != nil {
		return nil, err
	}
	ex, err := mcpexec.New(ctx, opts)
	if err != nil {
		if ctx.Err() != nil { // an interruption, not a fault of the file
			return nil, fmt.Errorf("agentfile: starting MCP server %q: %w", m.Name, errors.Join(ctx.Err(), err))
		}
		return nil, b.mcpError(p, m, err)
	}
	return ex, nil
}

// headers reads the values of an HTTP server's headers_env from the
// environment; a variable that is unset or empty is an error, since the
// server would otherwise be called without its credentials.
func (b *builder) headers(p path, m MCPSpec) (http.Header, error) {
	if len(m.HeadersEnv) == 0 {
		return nil, nil
	}
	h := http.Header{}
	for _, name := range slices.Sorted(maps.Keys(m.HeadersEnv)) {
		env := m.HeadersEnv[name]
		v := b.opts.getenv(env)
		if v == "" {
			return nil, b.loc.errorAt(p.at("headers_env", name), fmt.Sprintf("the environment variable %s, which holds header %s, is not set", env, name))
		}
		h.Set(name, v)
	}
	return h, nil
}

// serverEnv is a stdio server's environment: PATH and HOME, the env_allow
// variables set on the host, then the explicit values.
func (b *builder) serverEnv(m MCPSpec) []string {
	var env []string
	for _, k := range append([]string{"PATH", "HOME"}, m.EnvAllow...) {
		if v := b.opts.getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	for k, v := range m.Env {
		env = append(env, k+"="+v)
	}
	return env
}
