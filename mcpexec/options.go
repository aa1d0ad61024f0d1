package mcpexec

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/polyloop/polyloop"
)

// DefaultTerminateTimeout is how long Close waits for a stdio server to exit
// after closing its stdin, and again after SIGTERM, before killing it.
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

	// URL is the endpoint of a streamable HTTP server. Its user information
	// and query are left out of Describe.
	URL string
	// HTTPClient is used for URL (nil: http.DefaultClient).
	HTTPClient *http.Client
	// Headers are set on every HTTP request to URL, through the HTTP
	// client's transport: credentials such as Authorization. They are never
	// in Describe or in error texts. The executor keeps its own copy.
	Headers http.Header

	// Transport is any other transport (an in-memory pair in tests, a custom
	// connection). Identity names it in Describe.
	Transport mcp.Transport

	// Identity, when set, replaces the command or URL in Describe.
	Identity string

	// Replay overrides the replay policy of the named tools; every name must
	// be a tool of the server.
	Replay map[string]polyloop.ReplayPolicy
	// Tools, when not nil, exposes only the named tools (each must exist).
	Tools []string
	// Roots are file:// URIs advertised to the server as roots. Empty: the
	// roots capability is not advertised at all.
	Roots []string

	// TerminateTimeout bounds each stage of closing a stdio server (zero:
	// DefaultTerminateTimeout).
	TerminateTimeout time.Duration
	// ClientName and ClientVersion identify this client to the server
	// (defaults "polyloop-mcpexec" and "v1").
	ClientName, ClientVersion string
}

// transport builds the transport the options ask for.
func (o *Options) transport() (mcp.Transport, error) {
	set := 0
	for _, b := range []bool{len(o.Command) > 0, o.URL != "", o.Transport != nil} {
		if b {
			set++
		}
	}
	if set != 1 {
		return nil, errors.New("mcpexec: set exactly one of Options.Command, Options.URL and Options.Transport")
	}
	if len(o.Headers) > 0 && o.URL == "" {
		return nil, errors.New("mcpexec: Options.Headers apply to Options.URL only")
	}
	switch {
	case o.Transport != nil:
		return o.Transport, nil
	case o.URL != "":
		return &mcp.StreamableClientTransport{Endpoint: o.URL, HTTPClient: withHeaders(o.HTTPClient, o.Headers)}, nil
	}
	cmd := exec.Command(o.Command[0], o.Command[1:]...)
	cmd.Env, cmd.Dir = o.Env, o.Dir
	terminate := o.TerminateTimeout
	if terminate <= 0 {
		terminate = DefaultTerminateTimeout
	}
	return &mcp.CommandTransport{Command: cmd, TerminateDuration: terminate}, nil
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

func (o *Options) check() error {
	for name, p := range o.Replay {
		switch p {
		case polyloop.ReplaySafe, polyloop.NeverReplay:
		default:
			return fmt.Errorf("mcpexec: Options.Replay[%q]: unknown replay policy %q", name, string(p))
		}
	}
	return nil
}

// connect opens the session.
func (o *Options) connect(ctx context.Context) (*mcp.ClientSession, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	t, err := o.transport()
	if err != nil {
		return nil, err
	}
	s, err := o.client().Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("mcpexec: connecting to %s: %w", o.identity(), err)
	}
	return s, nil
}
