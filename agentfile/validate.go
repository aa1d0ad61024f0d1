package agentfile

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/polyloop/polyloop"
)

// validator checks a decoded File and gathers every problem with its
// position, so that one run of polyloop reports them all.
type validator struct {
	loc  *locator
	errs ErrorList
	// skip are paths whose value did not decode: a check of a value at or
	// under one of them would only report its zero value.
	skip []path
}

func (v *validator) fail(p path, format string, args ...any) {
	for _, s := range v.skip {
		if p.within(s) {
			return
		}
	}
	v.errs = append(v.errs, v.loc.errorAt(p, fmt.Sprintf(format, args...)))
}

// systemFile reads the system prompt file into f.System.
func (v *validator) systemFile(name string, f *File) {
	if f.SystemFile == "" || f.System != "" {
		return
	}
	b, err := readSystemFile(resolve(name, f.SystemFile))
	if errors.Is(err, polyloop.ErrInputTooLarge) {
		v.fail(path{"system_file"}, "the system prompt file is larger than %d bytes, the most a run's snapshot holds", polyloop.MaxInputFileBytes)
		return
	}
	if err != nil {
		v.fail(path{"system_file"}, "cannot read the system prompt file: %v", err)
		return
	}
	if what := secretIn(string(b), ""); what != "" {
		e := v.loc.errorAt(path{"system_file"}, "the system prompt file holds a value that "+what+secretAdvice)
		e.Err = ErrSecret
		v.errs = append(v.errs, e)
		return
	}
	f.System = string(b)
}

// readSystemFile reads at most polyloop.MaxInputFileBytes of the file.
func readSystemFile(path string) ([]byte, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	return polyloop.ReadLimited(context.Background(), file, polyloop.MaxInputFileBytes)
}

// sorted returns the problems in file order.
func (v *validator) sorted() ErrorList {
	slices.SortStableFunc(v.errs, func(a, b *Error) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Column - b.Column
	})
	return v.errs
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (v *validator) file(f *File) {
	if strings.TrimSpace(f.Name) == "" {
		v.fail(path{"name"}, "required: the agent's name (it names every run of this agent in ls and stats)")
	}
	if f.System != "" && f.SystemFile != "" {
		v.fail(path{"system_file"}, "give the system prompt either inline (system) or as a file (system_file), not both")
	}
	v.model(f.Model)
	v.parser(f.Parser, f.Tools)
	v.tools(f.Tools)
	v.gates(f)
	v.limits(f.Limits)
	v.memory(f)
	v.environment(f)
}

var providers = []string{"openai", "anthropic", "script"}

func (v *validator) model(m ModelSpec) {
	p := path{"model"}
	if m.Provider == "" {
		v.fail(p.at("provider"), "required: the model provider, one of %s", strings.Join(providers, ", "))
		return
	}
	if !slices.Contains(providers, m.Provider) {
		v.fail(p.at("provider"), "expected one of %s, found %q", strings.Join(providers, ", "), m.Provider)
		return
	}
	if m.Provider == "script" {
		v.script(m)
	} else {
		v.remote(m)
	}
	if m.Temperature != nil && (*m.Temperature < 0 || *m.Temperature > 2) {
		v.fail(p.at("temperature"), "expected a number from 0 to 2, found %v", *m.Temperature)
	}
	if m.TopP != nil && (*m.TopP <= 0 || *m.TopP > 1) {
		v.fail(p.at("top_p"), "expected a number greater than 0 and at most 1, found %v", *m.TopP)
	}
	v.nonNegative(p.at("max_output_tokens"), int64(m.MaxOutputTokens))
	v.nonNegative(p.at("retries"), int64(m.Retries))
	v.nonNegative(p.at("retry_backoff_ms"), int64(m.RetryBackoffMS))
	v.prices(m)
}

func (v *validator) nonNegative(p path, n int64) {
	if n < 0 {
		v.fail(p, "expected zero or a positive integer, found %d", n)
	}
}

func (v *validator) script(m ModelSpec) {
	p := path{"model"}
	if m.BaseURL != "" {
		v.fail(p.at("base_url"), "provider script makes no network call; base_url applies to openai and anthropic")
	}
	if m.APIKeyEnv != "" {
		v.fail(p.at("api_key_env"), "provider script needs no API key; api_key_env applies to openai and anthropic")
	}
	if len(m.Script) == 0 {
		v.fail(p.at("script"), "provider script needs a script: a list of turns (text, tool and args, or fail)")
	}
	if m.CostPerToken < 0 {
		v.fail(p.at("cost_per_token"), "expected zero or a positive number, found %v", m.CostPerToken)
	}
	for i, t := range m.Script {
		v.turn(p.at("script", i), t)
	}
}

func (v *validator) turn(p path, t TurnSpec) {
	switch {
	case t.Fail != "" && (t.Text != "" || t.Tool != ""):
		v.fail(p.at("fail"), "a failing turn has no text or tool: the model call fails")
	case t.Fail == "" && t.Text == "" && t.Tool == "":
		v.fail(p, "expected a turn with text, a tool call (tool and args) or a failure (fail)")
	}
	if t.Tool == "" && (t.Args != nil || t.ID != "") {
		v.fail(p.at("args"), "args and id belong to a tool call: set tool")
	}
	v.nonNegative(p.at("delay_ms"), int64(t.DelayMS))
}

func (v *validator) remote(m ModelSpec) {
	p := path{"model"}
	if m.Model == "" {
		v.fail(p.at("model"), "required for provider %s: the model id (e.g. gpt-4o-mini, claude-sonnet-4-5)", m.Provider)
	}
	if len(m.Script) > 0 {
		v.fail(p.at("script"), "a script applies to provider script only")
	}
	if m.CostPerToken != 0 {
		v.fail(p.at("cost_per_token"), "cost_per_token applies to provider script only (real providers are priced by their client's price table)")
	}
	if m.APIKeyEnv != "" && !envName.MatchString(m.APIKeyEnv) {
		v.fail(p.at("api_key_env"), "expected the name of an environment variable (letters, digits, underscore), found %q", m.APIKeyEnv)
	}
	if m.BaseURL != "" {
		v.url(p.at("base_url"), m.BaseURL)
	}
	if m.Provider == "anthropic" {
		for name, set := range map[string]bool{"temperature": m.Temperature != nil, "top_p": m.TopP != nil, "seed": m.Seed != nil} {
			if set {
				v.fail(p.at(name), "the Anthropic Messages API takes no %s: leave it out", name)
			}
		}
	}
}

// url checks an http(s) URL that enters the snapshot: no credentials in it.
func (v *validator) url(p path, raw string) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.fail(p, "expected an http:// or https:// URL, found %q", raw)
		return
	}
	if _, ok := u.User.Password(); ok {
		v.errs = append(v.errs, v.secretError(p, "the URL holds a password"))
	}
	for _, name := range slices.Sorted(maps.Keys(u.Query())) {
		if keyish(name) {
			v.errs = append(v.errs, v.secretError(p, fmt.Sprintf("the URL has the key-ish query parameter %q "+
				"(a model key comes from api_key_env; an MCP server's credentials go in headers_env)", name)))
		}
	}
}

var parserKinds = []string{"toolcall", "json", "code"}

// kindOptions are the parser options each kind accepts.
var kindOptions = map[string][]string{
	"toolcall": {"require_action", "max_actions_per_step", "check_args"},
	"json":     {"ignore", "text_is_final", "max_actions_per_step", "check_args"},
	"code":     {"lang", "tags", "final_marker"},
}

func (v *validator) parser(ps ParserSpec, tools ToolsSpec) {
	p := path{"parser"}
	kind := ps.Kind
	if kind == "" {
		kind = "toolcall"
	}
	if !slices.Contains(parserKinds, kind) {
		v.fail(p.at("kind"), "expected one of %s, found %q", strings.Join(parserKinds, ", "), ps.Kind)
		return
	}
	set := map[string]bool{
		"require_action":       ps.Options.RequireAction,
		"lang":                 ps.Options.Lang != "",
		"tags":                 len(ps.Options.Tags) > 0,
		"final_marker":         ps.Options.FinalMarker != "",
		"ignore":               len(ps.Options.Ignore) > 0,
		"text_is_final":        ps.Options.TextIsFinal,
		"max_actions_per_step": ps.Options.MaxActionsPerStep != 0,
		"check_args":           ps.Options.CheckArgs != nil,
	}
	v.nonNegative(p.at("options", "max_actions_per_step"), int64(ps.Options.MaxActionsPerStep))
	for _, name := range []string{"require_action", "lang", "tags", "final_marker", "ignore", "text_is_final", "max_actions_per_step", "check_args"} {
		if set[name] && !slices.Contains(kindOptions[kind], name) {
			v.fail(p.at("options", name), "not an option of parser kind %s (its options: %s)", kind, optionList(kindOptions[kind]))
		}
	}
	if kind == "code" && tools.Shell == nil {
		v.fail(p.at("kind"), "parser kind code makes code actions, which run in the shell: configure tools.shell")
	}
}

func optionList(opts []string) string {
	if len(opts) == 0 {
		return "none"
	}
	return strings.Join(opts, ", ")
}

func (v *validator) tools(t ToolsSpec) {
	if t.Shell != nil {
		v.shell(*t.Shell)
	}
	names := map[string]bool{}
	for i, m := range t.MCP {
		p := path{"tools", "mcp", i}
		if m.Name == "" {
			v.fail(p.at("name"), "required: a name for the MCP server")
		} else if names[m.Name] {
			v.fail(p.at("name"), "duplicate MCP server name %q", m.Name)
		}
		names[m.Name] = true
		v.mcp(p, m)
	}
}

func (v *validator) replay(p path, policy string) {
	switch polyloop.ReplayPolicy(policy) {
	case "", polyloop.ReplaySafe, polyloop.NeverReplay, polyloop.ReplayIdempotent:
		return
	case polyloop.RestoreAndReplay:
		if len(p) >= 2 && p[0] == "tools" && p[1] == "shell" {
			return // checked against the environment (environment.go)
		}
	}
	v.fail(p, "expected %s, %s or %s, found %q", polyloop.ReplaySafe, polyloop.NeverReplay, polyloop.ReplayIdempotent, policy)
}

func (v *validator) shell(s ShellSpec) {
	p := path{"tools", "shell"}
	v.nonNegative(p.at("timeout_ms"), int64(s.TimeoutMS))
	v.nonNegative(p.at("output_limit"), int64(s.OutputLimit))
	v.replay(p.at("replay"), s.Replay)
	v.envNames(p.at("env_allow"), s.EnvAllow)
	for k := range s.Env {
		if !envName.MatchString(k) {
			v.fail(p.at("env", k), "expected an environment variable name, found %q", k)
		}
	}
}

func (v *validator) envNames(p path, names []string) {
	for i, n := range names {
		if !envName.MatchString(n) {
			v.fail(p.at(i), "expected an environment variable name, found %q", n)
		}
	}
}

func (v *validator) mcp(p path, m MCPSpec) {
	switch {
	case m.Command == "" && m.URL == "":
		v.fail(p, "expected command (a stdio server) or url (a streamable HTTP server)")
	case m.Command != "" && m.URL != "":
		v.fail(p.at("url"), "give command or url, not both")
	case m.URL != "":
		v.url(p.at("url"), m.URL)
		if len(m.Args) > 0 || len(m.Env) > 0 || len(m.EnvAllow) > 0 || m.Dir != "" {
			v.fail(p.at("url"), "args, env, env_allow and dir apply to a command, not to a url")
		}
	}
	v.envNames(p.at("env_allow"), m.EnvAllow)
	for k := range m.Env {
		if !envName.MatchString(k) {
			v.fail(p.at("env", k), "expected an environment variable name, found %q", k)
		}
	}
	for tool, policy := range m.Replay {
		v.replay(p.at("replay", tool), policy)
	}
	for tool, companion := range m.Reconcile {
		if tool == "" || companion == "" || tool == companion {
			v.fail(p.at("reconcile", tool), "expected a tool and its companion lookup tool, two names of the server, found %q: %q", tool, companion)
		}
	}
	if !toolPrefix.MatchString(m.Prefix) {
		v.fail(p.at("prefix"), "expected letters, digits, _ and - only (the prefix becomes part of tool names), found %q", m.Prefix)
	}
	v.headersEnv(p, m)
	v.oauth(p, m)
	v.nonNegative(p.at("start_timeout_ms"), int64(m.StartTimeoutMS))
	v.nonNegative(p.at("call_timeout_ms"), int64(m.CallTimeoutMS))
}

// toolPrefix is what a tool-name prefix may hold: what model providers
// accept in tool names.
var toolPrefix = regexp.MustCompile(`^[A-Za-z0-9_-]*$`)

// headerName is an HTTP header name (a token, RFC 9110).
var headerName = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")

func (v *validator) headersEnv(p path, m MCPSpec) {
	if len(m.HeadersEnv) > 0 && m.URL == "" {
		v.fail(p.at("headers_env"), "headers_env applies to a url, not to a command (a stdio server takes env_allow)")
	}
	for name, env := range m.HeadersEnv {
		if !headerName.MatchString(name) {
			v.fail(p.at("headers_env", name), "expected an HTTP header name, found %q", name)
		}
		if !envName.MatchString(env) {
			v.fail(p.at("headers_env", name), "expected the name of the environment variable holding the header's value, found %q", env)
		}
	}
}

func (v *validator) limits(l LimitsSpec) {
	p := path{"limits"}
	v.nonNegative(p.at("max_steps"), int64(l.MaxSteps))
	v.nonNegative(p.at("max_tokens"), l.MaxTokens)
	v.nonNegative(p.at("observation_limit"), int64(l.ObservationLimit))
	if l.MaxCostUSD < 0 {
		v.fail(p.at("max_cost_usd"), "expected zero or a positive number, found %v", l.MaxCostUSD)
	}
	if l.TimeLimit != "" {
		v.duration(p.at("time_limit"), l.TimeLimit)
	}
	if l.WorkingLimit != "" {
		v.duration(p.at("working_limit"), l.WorkingLimit)
	}
}
