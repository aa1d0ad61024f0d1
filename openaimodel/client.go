package openaimodel

import (
	"fmt"
	"net/http"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/provider"
)

// DefaultBaseURL is OpenAI's API.
const DefaultBaseURL = "https://api.openai.com/v1/"

// DefaultTimeout bounds one attempt when Options.Timeout is zero.
const DefaultTimeout = provider.DefaultTimeout

// DefaultConnections is the connections the client keeps open when
// Options.Connections is zero.
const DefaultConnections = provider.DefaultConnections

// Options configure a Client. The zero value talks to OpenAI with the key
// from OPENAI_API_KEY.
type Options struct {
	// APIKey authenticates the client. Empty: the OPENAI_API_KEY environment
	// variable. OpenAI's API needs one (New fails with ErrNoAPIKey); servers
	// at another BaseURL that need no key (Ollama, llama.cpp) accept none.
	// The key is never in Describe, in replies or in error texts.
	APIKey string
	// BaseURL is the API's base URL, e.g. "http://localhost:8000/v1/" for
	// vLLM. Empty: DefaultBaseURL.
	BaseURL string
	// Model is the model used when the request's ModelParams.Model is empty.
	Model string
	// MaxTokensField names the field that carries
	// ModelParams.MaxOutputTokens: MaxCompletionTokens (the default, what
	// OpenAI wants) or MaxTokens (for servers that only know the older
	// field).
	MaxTokensField string
	// UnansweredToolResult is the text sent as the result of a tool call the
	// history does not answer (see the package doc). Empty:
	// DefaultUnansweredToolResult. The model sees it, so Describe reports it.
	UnansweredToolResult string
	// HTTPClient sends the requests. Nil: a client on a transport of its
	// own whose pool keeps Connections idle connections to the server, and
	// that offers HTTP/2 over TLS.
	HTTPClient *http.Client
	// Connections is how many calls the client has under way at once in
	// normal use (a sweep's concurrency, bounded by its provider's
	// max_connections): the pool keeps that many connections open for
	// reuse. It bounds nothing: a burst of more calls opens more. Zero:
	// DefaultConnections. Ignored with HTTPClient.
	Connections int
	// Timeout bounds one attempt: zero means DefaultTimeout, negative means
	// no bound besides the call's context.
	Timeout time.Duration
	// MaxBackoff caps the backoff between retries (zero: DefaultMaxBackoff).
	MaxBackoff time.Duration
	// MaxRetryAfter is the longest Retry-After the client waits for; a longer
	// one ends the retries (zero: DefaultMaxRetryAfter).
	MaxRetryAfter time.Duration
	// Prices is the price table that costs replies. Nil: the table shipped
	// with the package (DefaultPrices) when BaseURL is OpenAI's API, else
	// none, and every cost is unknown (see the package doc).
	Prices *PriceTable
}

// Client is a polyloop.ModelClient for an OpenAI-compatible Chat
// Completions API. It is safe for concurrent use.
type Client struct {
	sdk            openai.Client
	p              provider.Caller[pkg] // the key is only to redact it from server texts
	maxTokensField string
}

var _ interface {
	polyloop.ModelClient
	polyloop.Describer
	polyloop.CostReporter
} = (*Client)(nil)

// New returns a client. It fails for an unknown MaxTokensField, an invalid
// price table, or with ErrNoAPIKey when the client would call OpenAI's own
// API (BaseURL empty or on its host) without a key; with another BaseURL an
// empty key is allowed, since local servers often need none. It does not
// contact the server.
func New(opts Options) (*Client, error) {
	c := &Client{maxTokensField: opts.MaxTokensField, p: provider.Caller[pkg]{Wire: wire, Settings: provider.Settings{
		Key: opts.APIKey, BaseURL: opts.BaseURL, Model: opts.Model, UnansweredToolResult: opts.UnansweredToolResult,
		Timeout: opts.Timeout, MaxBackoff: opts.MaxBackoff, MaxRetryAfter: opts.MaxRetryAfter, Prices: opts.Prices,
	}}}
	if err := c.defaults(); err != nil {
		return nil, err
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = provider.HTTPClient(opts.Connections)
	}
	c.sdk = openai.NewClient(
		option.WithBaseURL(c.p.BaseURL),
		option.WithAPIKey(c.p.Key),
		option.WithHTTPClient(provider.SameOriginRedirects(hc)),
		option.WithMaxRetries(0),
	)
	return c, nil
}

func (c *Client) defaults() error {
	switch c.maxTokensField {
	case "":
		c.maxTokensField = MaxCompletionTokens
	case MaxCompletionTokens, MaxTokens:
	default:
		return fmt.Errorf("openaimodel: MaxTokensField %q is neither %q nor %q", c.maxTokensField, MaxCompletionTokens, MaxTokens)
	}
	d := provider.Defaults{KeyEnv: "OPENAI_API_KEY", BaseURL: DefaultBaseURL, Prices: shippedPrices.Shared}
	if isOpenAI(c.p.BaseURL) {
		d.ErrNoKey = ErrNoAPIKey // OpenAI refuses every call without one
	}
	return c.p.Defaults(d)
}

// isOpenAI reports whether baseURL is OpenAI's own API: empty (the default)
// or on the host of DefaultBaseURL.
func isOpenAI(baseURL string) bool {
	return baseURL == "" || provider.SameHost(baseURL, DefaultBaseURL)
}

// String describes the client without its key.
func (c *Client) String() string { return "openaimodel.Client(" + c.p.SafeBaseURL() + ")" }

// GoString describes the client without its key.
func (c *Client) GoString() string { return c.String() }
