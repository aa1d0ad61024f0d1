package mcpexec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// LoopbackAuthorizer returns an OAuth.Authorize for a program run from a
// terminal. It first asks the authorization URL itself: an authorization
// server that grants at once (a pre-approved client, a test server)
// redirects straight to redirectURL, and the code is taken from that
// redirect. Otherwise it listens on redirectURL's host and port (a loopback
// address), writes the URL for the user to open to prompt (nil: os.Stderr),
// and waits for the authorization server's redirect, or for ctx.
func LoopbackAuthorizer(redirectURL string, prompt io.Writer) func(ctx context.Context, authURL string) (*auth.AuthorizationResult, error) {
	if prompt == nil {
		prompt = os.Stderr
	}
	return func(ctx context.Context, authURL string) (*auth.AuthorizationResult, error) {
		redirect, err := url.Parse(redirectURL)
		if err != nil {
			return nil, fmt.Errorf("mcpexec: OAuth redirect URL: %w", err)
		}
		if res, ok := grantedAtOnce(ctx, authURL, redirect); ok {
			return res, nil
		}
		return awaitRedirect(ctx, authURL, redirect, prompt)
	}
}

// grantedAtOnce asks authURL without following redirects and takes the code
// from a redirect to redirect.
func grantedAtOnce(ctx context.Context, authURL string, redirect *url.URL) (*auth.AuthorizationResult, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, false
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		return nil, false
	}
	_ = resp.Body.Close()
	loc, err := resp.Location()
	if err != nil || loc.Host != redirect.Host || loc.Path != redirect.Path || loc.Query().Get("code") == "" {
		return nil, false
	}
	return result(loc.Query()), true
}

func result(q url.Values) *auth.AuthorizationResult {
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
}

// awaitRedirect serves redirect's path on its host until the authorization
// server's redirect arrives.
func awaitRedirect(ctx context.Context, authURL string, redirect *url.URL, prompt io.Writer) (*auth.AuthorizationResult, error) {
	ln, err := net.Listen("tcp", redirect.Host)
	if err != nil {
		return nil, fmt.Errorf("mcpexec: OAuth: listening for the redirect on %s: %w", redirect.Host, err)
	}
	got := make(chan url.Values, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != redirect.Path {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintln(w, "polyloop: authorization received; you may close this page.")
		select {
		case got <- r.URL.Query():
		default:
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	fmt.Fprintf(prompt, "To authorize access to the MCP server, open this URL in a browser:\n  %s\n", authURL)
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case q := <-got:
		if e := q.Get("error"); e != "" {
			return nil, fmt.Errorf("mcpexec: OAuth: the authorization server refused: %s %s", e, q.Get("error_description"))
		}
		if q.Get("code") == "" {
			return nil, errors.New("mcpexec: OAuth: the redirect carries no code")
		}
		return result(q), nil
	}
}
