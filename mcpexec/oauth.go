package mcpexec

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/auth/extauth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// OAuth configures NewOAuthHandler: the OAuth 2.1 authorization code flow
// of the MCP authorization spec, run by the SDK's auth package. The client
// is identified, in the SDK's order of preference, by a client ID metadata
// document (ClientMetadataURL, when set and the authorization server
// supports it), a pre-registered client (ClientID and ClientSecret, when
// set), or dynamic client registration at the authorization server. None of these values, nor any token, enters
// Describe, a record or an event.
type OAuth struct {
	// Grant is the OAuth grant: GrantAuthorizationCode (the default: a user
	// authorizes once, the token cache keeps the grant for later runs) or
	// GrantClientCredentials (a confidential client acting on its own
	// behalf, no user: ClientID and ClientSecret are required, RedirectURL,
	// Authorize and TokenCache are not used).
	Grant string
	// ClientID and ClientSecret identify a client registered in advance
	// with the server's authorization server. An empty ClientSecret is a
	// public client.
	ClientID, ClientSecret string
	// ClientMetadataURL is the HTTPS URL of a client ID metadata document.
	ClientMetadataURL string
	// RedirectURL is where the authorization server sends the code
	// (required), for example http://127.0.0.1:8976/callback.
	RedirectURL string
	// Authorize takes the user to the authorization URL and returns the
	// code, state and issuer the authorization server redirected to
	// RedirectURL with. Nil: LoopbackAuthorizer(RedirectURL, nil).
	Authorize func(ctx context.Context, authURL string) (*auth.AuthorizationResult, error)
	// TokenCache is a file that keeps the token between runs (written with
	// mode 0600; it holds a credential: keep it out of version control).
	// A cached token still valid is used first; an expired or refused one
	// starts the flow again. Empty: the token lives in memory only.
	TokenCache string
	// HTTPClient makes the metadata, registration and token requests (nil:
	// http.DefaultClient).
	HTTPClient *http.Client
}

// The grants OAuth.Grant names.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

// NewOAuthHandler builds the OAuth handler for Options.OAuthHandler.
func NewOAuthHandler(o OAuth) (auth.OAuthHandler, error) {
	switch o.Grant {
	case "", GrantAuthorizationCode:
		return authorizationCode(o)
	case GrantClientCredentials:
		if o.ClientID == "" || o.ClientSecret == "" {
			return nil, errors.New("mcpexec: OAuth: the client_credentials grant needs ClientID and ClientSecret")
		}
		h, err := extauth.NewClientCredentialsHandler(&extauth.ClientCredentialsHandlerConfig{
			Credentials: &oauthex.ClientCredentials{ClientID: o.ClientID,
				ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret}},
			HTTPClient: o.HTTPClient,
		})
		if err != nil {
			return nil, fmt.Errorf("mcpexec: OAuth: %w", err)
		}
		return h, nil
	}
	return nil, fmt.Errorf("mcpexec: OAuth.Grant %q: expected %q or %q", o.Grant, GrantAuthorizationCode, GrantClientCredentials)
}

func authorizationCode(o OAuth) (auth.OAuthHandler, error) {
	if o.RedirectURL == "" {
		return nil, errors.New("mcpexec: OAuth.RedirectURL is required")
	}
	fetch := o.Authorize
	if fetch == nil {
		fetch = LoopbackAuthorizer(o.RedirectURL, nil)
	}
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: o.RedirectURL,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			return fetch(ctx, args.URL)
		},
		Client: o.HTTPClient,
	}
	if o.ClientMetadataURL != "" {
		cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: o.ClientMetadataURL}
	}
	if o.ClientID != "" {
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: o.ClientID}
		if o.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret}
		}
	}
	cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{
		Metadata: &oauthex.ClientRegistrationMetadata{RedirectURIs: []string{o.RedirectURL}},
	}
	if o.TokenCache != "" {
		cache := &tokenCache{path: o.TokenCache}
		if tok := cache.load(); tok != nil {
			cfg.InitialTokenSource = oauth2.StaticTokenSource(tok)
		}
		cfg.NewTokenSource = func(ctx context.Context, c *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			cache.store(tok)
			return &cachingSource{base: c.TokenSource(ctx, tok), cache: cache, last: tok.AccessToken}, nil
		}
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, fmt.Errorf("mcpexec: OAuth: %w", err)
	}
	return h, nil
}
