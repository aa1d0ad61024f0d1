package agentfile

import (
	"fmt"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/polyloop/polyloop/mcpexec"
)

// OAuthSpec authorizes the requests to an MCP server's url with OAuth 2.1
// (package mcpexec, OAuth). The client's identity comes from the
// environment, never from the file; the token is kept in token_cache, never
// in a record, an event or the snapshot.
//
//	oauth:
//	  grant: authorization_code        # default; or client_credentials
//	  client_id_env: SEARCH_CLIENT_ID  # a pre-registered client (else dynamic registration)
//	  client_secret_env: SEARCH_CLIENT_SECRET
//	  redirect_url: http://127.0.0.1:8976/callback
//	  token_cache: .polyloop/oauth/search.json
type OAuthSpec struct {
	// Grant is authorization_code (default: a user authorizes once, in a
	// browser; the token cache keeps the grant for later runs) or
	// client_credentials (no user: client_id_env and client_secret_env are
	// required).
	Grant string `yaml:"grant"`
	// ClientIDEnv and ClientSecretEnv name the environment variables
	// holding a pre-registered client's id and secret. Without them the
	// client registers itself (dynamic client registration), or uses
	// client_metadata_url.
	ClientIDEnv     string `yaml:"client_id_env"`
	ClientSecretEnv string `yaml:"client_secret_env"`
	// ClientMetadataURL is the HTTPS URL of a client ID metadata document.
	ClientMetadataURL string `yaml:"client_metadata_url"`
	// RedirectURL receives the authorization code: a loopback address this
	// process listens on while the user authorizes (default
	// DefaultRedirectURL).
	RedirectURL string `yaml:"redirect_url"`
	// TokenCache is a file, relative to the agent file, that keeps the token
	// between runs (mode 0600; keep it out of version control). Empty: the
	// token lives as long as the process.
	TokenCache string `yaml:"token_cache"`
}

// DefaultRedirectURL is oauth.redirect_url's default.
const DefaultRedirectURL = "http://127.0.0.1:8976/callback"

func (v *validator) oauth(p path, m MCPSpec) {
	o := m.OAuth
	if o == nil {
		return
	}
	p = p.at("oauth")
	if m.URL == "" {
		v.fail(p, "oauth applies to a url, not to a command")
	}
	switch o.Grant {
	case "", mcpexec.GrantAuthorizationCode:
	case mcpexec.GrantClientCredentials:
		if o.ClientIDEnv == "" || o.ClientSecretEnv == "" {
			v.fail(p.at("grant"), "the client_credentials grant needs client_id_env and client_secret_env")
		}
	default:
		v.fail(p.at("grant"), "expected authorization_code or client_credentials, found %q", o.Grant)
	}
	for key, env := range map[string]string{"client_id_env": o.ClientIDEnv, "client_secret_env": o.ClientSecretEnv} {
		if env != "" && !envName.MatchString(env) {
			v.fail(p.at(key), "expected the name of an environment variable, found %q", env)
		}
	}
	if o.ClientSecretEnv != "" && o.ClientIDEnv == "" {
		v.fail(p.at("client_secret_env"), "a client secret needs its client: set client_id_env too")
	}
	if o.ClientMetadataURL != "" {
		if u, err := url.Parse(o.ClientMetadataURL); err != nil || u.Scheme != "https" || u.Host == "" {
			v.fail(p.at("client_metadata_url"), "expected an https:// URL, found %q", o.ClientMetadataURL)
		}
	}
	if o.RedirectURL != "" {
		if u, err := url.Parse(o.RedirectURL); err != nil || u.Scheme != "http" || u.Host == "" {
			v.fail(p.at("redirect_url"), "expected an http:// URL on a loopback address, found %q", o.RedirectURL)
		}
	}
}

// oauth builds the OAuth handler of an MCP server, reading the client's
// identity from the environment.
func (b *builder) oauth(p path, m MCPSpec) (auth.OAuthHandler, error) {
	o := m.OAuth
	if o == nil {
		return nil, nil
	}
	p = p.at("oauth")
	read := func(key, env string) (string, error) {
		if env == "" {
			return "", nil
		}
		v := b.opts.getenv(env)
		if v == "" {
			return "", b.loc.errorAt(p.at(key), fmt.Sprintf("the environment variable %s is not set", env))
		}
		return v, nil
	}
	id, err := read("client_id_env", o.ClientIDEnv)
	if err != nil {
		return nil, err
	}
	secret, err := read("client_secret_env", o.ClientSecretEnv)
	if err != nil {
		return nil, err
	}
	redirect := o.RedirectURL
	if redirect == "" {
		redirect = DefaultRedirectURL
	}
	h, err := mcpexec.NewOAuthHandler(mcpexec.OAuth{
		Grant: o.Grant, ClientID: id, ClientSecret: secret, ClientMetadataURL: o.ClientMetadataURL,
		RedirectURL: redirect, TokenCache: resolve(b.file, o.TokenCache),
	})
	if err != nil {
		return nil, b.loc.errorAt(p, err.Error())
	}
	return h, nil
}
