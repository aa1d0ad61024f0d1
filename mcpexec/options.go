package mcpexec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/polyloop/polyloop"
)

// DefaultTerminateTimeout is how long Close waits for a stdio server to exit
// after closing its stdin, and again after SIGTERM to its process group,
// before killing the group.
const DefaultTerminateTimeout = time.Second

// Options say which server to reach and how to expose its tools. Exactly one
// of Command, URL and Transport must be set.
type Options struct {
	// Command starts a stdio server: the program and its arguments. The
	// arguments are part of Describe (the snapshot): pass secrets through
	// Env, never as arguments.
	Command []string
	// Env is the server process's environment, as "KEY=value" strings. Nil
	// means the server inherits this process's environment, as exec.Cmd
	// does; set it to pass only what the server needs.
	Env []string
	// Dir is the server process's working directory (empty: this process's).
	Dir string
	// Stderr, when set, receives the server process's standard error as it
	// is written (nil: it is dropped). Either way the executor keeps its
	// last StderrTail bytes for StartError.
	Stderr io.Writer

	// URL is the endpoint of a streamable HTTP server. Its user information
	// and query are left out of Describe.
	URL string
	// HTTPClient is used for URL (nil: http.DefaultClient).
	HTTPClient *http.Client
	// Headers are set on every HTTP request to URL, through the HTTP
	// client's transport: credentials such as Authorization. They are never
	// in Describe or in error texts. The executor keeps its own copy.
	Headers http.Header
	// OAuthHandler authorizes the requests to URL (OAuth 2.1, as the MCP
	// authorization spec has it): the SDK's transport asks it for a token
	// source and calls its Authorize on a 401 or 403. NewOAuthHandler builds
	// one; any auth.OAuthHandler will do. Tokens never enter Describe.
	OAuthHandler auth.OAuthHandler

	// Transport is any other transport (an in-memory pair in tests, a custom
	// connection). Identity names it in Describe.
	Transport mcp.Transport

	// Identity, when set, replaces the command or URL in Describe.
	Identity string

	// Prefix is put before every tool name the executor exposes (ToolSpecs,
	// Describe, the names Execute accepts), so that two servers offering the
	// same name can serve one agent: with Prefix "fs_", the server's
	// read_file is the model's fs_read_file. Letters, digits, '_' and '-'
	// only, as model providers accept in tool names.
	Prefix string
	// Replay overrides the replay policy of the named tools; every name must
	// be a tool of the server (its own name, without Prefix).
	Replay map[string]polyloop.ReplayPolicy
	// Tools, when not nil, exposes only the named tools (each must exist;
	// the server's own names, without Prefix).
	Tools []string
	// Reconcile names, for a tool, a companion tool of the same server that
	// answers, on resume, whether a call of the tool of unknown outcome
	// happened: {"make_payment": "lookup_payment"} (the server's own names,
	// without Prefix; both must exist; the companion need not be exposed).
	// The companion is called with the arguments {"idempotency_key": K} —
	// the key the call was made with, in its _meta under MetaKey — and
	// answers a polyloop.VerdictJSON, as its structured content or as its
	// text. A companion that fails (an error result, a failed call) or
	// answers anything else is an error of the reconciler, which
	// propagates out of Resume.
	Reconcile map[string]string
	// Roots are file:// URIs advertised to the server as roots. Empty: the
	// roots capability is not advertised at all.
	Roots []string

	// TerminateTimeout bounds each stage of closing a stdio server (zero:
	// DefaultTerminateTimeout).
	TerminateTimeout time.Duration
	// StartTimeout bounds New: a server that has not answered initialize
	// and tools/list by then fails it with a *StartError wrapping
	// ErrTimeout (zero: DefaultStartTimeout).
	StartTimeout time.Duration
	// CallTimeout bounds each call: a server that has not answered by then
	// is sent notifications/cancelled and the action is EnvError, its
	// observation saying so (zero: DefaultCallTimeout). Set, it enters
	// Describe.
	CallTimeout time.Duration
	// ClientName and ClientVersion identify this client to the server
	// (defaults "polyloop-mcpexec" and "v1").
	ClientName, ClientVersion string
}

// transport builds the transport the options ask for, watched for the
// signs of a tool at work (signs.go), its HTTP messages bounded (big), and
// for a stdio server the tail of its standard error (nil otherwise).
func (o *Options) transport(watch *signs, big *oversize) (mcp.Transport, *tail, error) {
	set := 0
	for _, b := range []bool{len(o.Command) > 0, o.URL != "", o.Transport != nil} {
		if b {
			set++
		}
	}
	if set != 1 {
		return nil, nil, errors.New("mcpexec: set exactly one of Options.Command, Options.URL and Options.Transport")
	}
	if (len(o.Headers) > 0 || o.OAuthHandler != nil) && o.URL == "" {
		return nil, nil, errors.New("mcpexec: Options.Headers and Options.OAuthHandler apply to Options.URL only")
	}
	switch t := o.Transport.(type) {
	case *mcp.StreamableClientTransport:
		watched := *t // the caller's transport stays as it is
		watched.HTTPClient = watchHTTP(t.HTTPClient, watch)
		return &watched, nil, nil
	case nil:
	default:
		return &watchedTransport{Transport: t, signs: watch}, nil, nil
	}
	if o.URL != "" {
		return &mcp.StreamableClientTransport{
			Endpoint:     o.URL,
			HTTPClient:   watchHTTP(big.client(withHeaders(o.HTTPClient, o.Headers)), watch),
			OAuthHandler: o.OAuthHandler,
			MaxEventSize: maxEventBytes, // 0 would mean no bound in this SDK version
		}, nil, nil
	}
	cmd := exec.Command(o.Command[0], o.Command[1:]...)
	cmd.Env, cmd.Dir = o.Env, o.Dir
	stderr := newTail(StderrTail)
	cmd.Stderr = stderr
	if o.Stderr != nil {
		cmd.Stderr = io.MultiWriter(stderr, o.Stderr)
	}
	terminate := o.TerminateTimeout
	if terminate <= 0 {
		terminate = DefaultTerminateTimeout
	}
	t := &stdioTransport{cmd: cmd, terminate: terminate}
	return &watchedTransport{Transport: t, signs: watch}, stderr, nil
}

// client builds the SDK client: no roots capability unless roots are
// configured. Automatic multi-round-trip handling (a server asking for input
// in the middle of a call, protocol 2026-07-28) is on only when roots are
// configured, since roots are the only input the executor can give;
// otherwise a result asking for input is reported as NotExecuted.
func (o *Options) client() *mcp.Client {
	name, version := o.ClientName, o.ClientVersion
	if name == "" {
		name = "polyloop-mcpexec"
	}
	if version == "" {
		version = "v1"
	}
	caps := &mcp.ClientCapabilities{}
	if len(o.Roots) > 0 {
		caps.RootsV2 = &mcp.RootCapabilities{}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: name, Version: version}, &mcp.ClientOptions{
		Capabilities:   caps,
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: len(o.Roots) == 0},
	})
	for _, uri := range o.Roots {
		c.AddRoots(&mcp.Root{URI: uri}) //nolint:staticcheck // roots are deprecated but still served
	}
	return c
}

// prefixChars is what model providers accept in a tool name; a prefix must
// keep names within it.
var prefixChars = regexp.MustCompile(`^[A-Za-z0-9_-]*$`)

func (o *Options) check() error {
	if !prefixChars.MatchString(o.Prefix) {
		return fmt.Errorf("mcpexec: Options.Prefix %q: use letters, digits, '_' and '-' only", o.Prefix)
	}
	for name, p := range o.Replay {
		switch p {
		case polyloop.ReplaySafe, polyloop.NeverReplay, polyloop.ReplayIdempotent:
		default:
			return fmt.Errorf("mcpexec: Options.Replay[%q]: unknown replay policy %q", name, string(p))
		}
	}
	return nil
}

// connect opens the session. The tail, for a stdio server, keeps the end
// of its standard error. watch counts the signs of a tool at work, big the
// messages refused for their size.
func (o *Options) connect(ctx context.Context, watch *signs, big *oversize) (*mcp.ClientSession, *tail, error) {
	if err := o.check(); err != nil {
		return nil, nil, err
	}
	t, stderr, err := o.transport(watch, big)
	if err != nil {
		return nil, nil, err
	}
	s, err := o.client().Connect(ctx, t, nil)
	if err != nil {
		return nil, nil, o.startError("connecting to", stderr, err)
	}
	return s, stderr, nil
}

// startError is New's error for a server that could not be started or
// listed. The session is closed by then, so a stdio server's stderr is
// complete.
func (o *Options) startError(stage string, stderr *tail, err error) *StartError {
	e := &StartError{Server: o.identity(), Stage: stage, Err: err}
	if stderr != nil {
		e.Stderr = stderr.String()
	}
	return e
}
