package mcpexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/polyloop/polyloop"
)

// Executor runs actions as calls to the tools of one MCP server session. It
// is safe for concurrent use (the SDK session is). Close it when done.
type Executor struct {
	session   *mcp.ClientSession
	tools     []*tool
	byName    map[string]*tool // by exposed name
	identity  string
	transport string
	prefix    string
	server    mcp.Implementation
	signs     *signs
	calls     atomic.Int64 // numbers the calls' progress tokens
	big       *oversize
	// callTimeout bounds a call; describedTimeout is Options.CallTimeout
	// as set (0: the default, left out of Describe).
	callTimeout, describedTimeout time.Duration
	// reconcile: the companion tool (server's name) of a tool, by exposed
	// name (Options.Reconcile).
	reconcile map[string]string
}

var _ polyloop.ActionExecutor = (*Executor)(nil)
var _ polyloop.Describer = (*Executor)(nil)

// New connects to the server, initializes the session and lists its tools.
// ctx bounds the connection and the listing, not the executor's life, and
// so does Options.StartTimeout. On error nothing is left open. A server
// that cannot be connected or listed gives a *StartError (with the end of
// a stdio server's standard error; wrapping ErrTimeout when the server did
// not answer within StartTimeout); invalid Options give a plain error.
func New(ctx context.Context, opts Options) (*Executor, error) {
	sctx, cancel, te := withTimeout(ctx, orDefault(opts.StartTimeout, DefaultStartTimeout), "start timeout")
	defer cancel()
	e, err := newExecutor(sctx, opts)
	var start *StartError
	if err != nil && timedOut(ctx, sctx, te) && errors.As(err, &start) {
		start.Err = te
	}
	return e, err
}

func newExecutor(ctx context.Context, opts Options) (*Executor, error) {
	watch, big := &signs{}, &oversize{}
	session, stderr, err := opts.connect(ctx, watch, big)
	if err != nil {
		return nil, err
	}
	tools, err := listTools(ctx, session, &opts)
	if err != nil {
		_ = session.Close()
		var start *StartError
		if stderr != nil && errors.As(err, &start) {
			start.Stderr = stderr.String()
		}
		return nil, err
	}
	e := &Executor{session: session, tools: tools, byName: map[string]*tool{}, identity: opts.identity(),
		transport: opts.transportName(), prefix: opts.Prefix, signs: watch, big: big,
		callTimeout: orDefault(opts.CallTimeout, DefaultCallTimeout), describedTimeout: max(opts.CallTimeout, 0)}
	for _, t := range tools {
		e.byName[t.spec.Name] = t
		if c, ok := opts.Reconcile[t.server]; ok {
			if e.reconcile == nil {
				e.reconcile = map[string]string{}
			}
			e.reconcile[t.spec.Name] = c
		}
	}
	if init := session.InitializeResult(); init != nil && init.ServerInfo != nil {
		e.server = *init.ServerInfo
	}
	return e, nil
}

// Close ends the session. For a stdio server it closes the server's stdin,
// waits up to Options.TerminateTimeout, then sends SIGTERM and at last
// SIGKILL to the server's process group, so it does not hang on a slow
// server and nothing the server started outlives it. The error, if any, is
// the server's exit status or the transport's failure to close.
func (e *Executor) Close() error {
	return e.session.Close()
}

// ToolSpecs returns the exposed tools, in the server's order, with the
// replay policy in force (the caller's override, or the annotations'). The
// result is a fresh copy.
func (e *Executor) ToolSpecs() []polyloop.ToolSpec {
	specs := make([]polyloop.ToolSpec, len(e.tools))
	for i, t := range e.tools {
		specs[i] = t.spec
		specs[i].Parameters = slices.Clone(t.spec.Parameters)
	}
	return specs
}

// Describe implements polyloop.Describer: the transport ("stdio",
// "streamable_http" or "custom"), the server's identity (command and
// arguments, URL without credentials or query, or Options.Identity), the
// tool prefix, the name and version the server reports, and the exposed
// tool names (prefixed). No environment value, header or token enters it.
func (e *Executor) Describe() polyloop.Component {
	cfg, _ := json.Marshal(struct { // strings only: always encodes
		Transport     string            `json:"transport"`
		Server        string            `json:"server"`
		Prefix        string            `json:"prefix,omitempty"`
		ServerName    string            `json:"server_name,omitempty"`
		ServerVersion string            `json:"server_version,omitempty"`
		Tools         []string          `json:"tools"`
		CallTimeoutMS int64             `json:"call_timeout_ms,omitempty"`
		Reconcile     map[string]string `json:"reconcile,omitempty"`
	}{e.transport, e.identity, e.prefix, e.server.Name, e.server.Version, e.names(), e.describedTimeout.Milliseconds(), e.reconcile})
	return polyloop.Component{Name: "mcpexec", Config: cfg}
}

// Execute implements polyloop.ActionExecutor; see the package documentation
// for the status mapping.
func (e *Executor) Execute(ctx context.Context, action polyloop.Action) (polyloop.ActionOutcome, error) {
	if err := ctx.Err(); err != nil {
		return polyloop.ActionOutcome{}, fmt.Errorf("mcpexec: %w", err)
	}
	if action.IsCode() {
		return outcome(polyloop.NotExecuted, "mcpexec runs tool calls only; a code action (lang %q) was refused", action.Lang), nil
	}
	t, ok := e.byName[action.Tool]
	if !ok {
		return outcome(polyloop.NotExecuted, "unknown tool %q; the tools are: %s", action.Tool, strings.Join(e.names(), ", ")), nil
	}
	args, why := t.validate(action.Args)
	if why != "" {
		return outcome(polyloop.NotExecuted, "tool %q: %s", action.Tool, why), nil
	}
	params := &mcp.CallToolParams{Name: t.server, Arguments: args}
	// A progress token lets the server report progress, a sign that the
	// tool started (signs.go).
	params.SetProgressToken("polyloop-" + strconv.FormatInt(e.calls.Add(1), 10))
	if key, ok := polyloop.IdempotencyKeyFromContext(ctx); ok {
		params.Meta[MetaKey] = key
	}
	before, bigBefore := e.signs.count(), e.big.count()
	cctx, cancel, te := withTimeout(ctx, e.callTimeout, "the call timeout")
	defer cancel()
	res, err := e.session.CallTool(cctx, params)
	if err != nil && timedOut(ctx, cctx, te) {
		return outcome(polyloop.EnvError, "tool %q: no answer within %v (the call timeout): the server may be stuck; "+
			"the call was cancelled, and whether the tool ran is unknown", action.Tool, te.after), nil
	}
	if err != nil {
		if e.big.count() != bigBefore && ctx.Err() == nil {
			return outcome(polyloop.EnvError, "tool %q: the server sent a message larger than %d bytes (MaxMessageBytes), "+
				"which was not read; the session is closed: %v", action.Tool, MaxMessageBytes, err), nil
		}
		return classify(ctx, action.Tool, err, e.signs.count() != before)
	}
	if res.NeedsInput() {
		return outcome(polyloop.Executed, "tool %q started, then asked for input (elicitation, sampling or roots) "+
			"that this executor does not provide; it did not finish", action.Tool), nil
	}
	obs, dropped := boundText(render(res))
	return polyloop.ActionOutcome{Status: polyloop.Executed, Observation: obs, TruncatedChars: dropped}, nil
}

func (e *Executor) names() []string {
	names := make([]string, len(e.tools))
	for i, t := range e.tools {
		names[i] = t.spec.Name
	}
	return names
}

func outcome(s polyloop.ActionStatus, format string, args ...any) polyloop.ActionOutcome {
	return polyloop.ActionOutcome{Status: s, Observation: fmt.Sprintf(format, args...)}
}
