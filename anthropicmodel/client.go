package anthropicmodel

import (
	"fmt"
	"net/http"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/provider"
)

// DefaultBaseURL is Anthropic's API.
const DefaultBaseURL = "https://api.anthropic.com/"

// DefaultTimeout bounds one attempt when Options.Timeout is zero.
const DefaultTimeout = provider.DefaultTimeout

// DefaultConnections is the connections the client keeps open when
// Options.Connections is zero.
const DefaultConnections = provider.DefaultConnections

// Options configure a Client. The zero value talks to Anthropic with the key
// from ANTHROPIC_API_KEY.
type Options struct {
	// APIKey authenticates the client. Empty: the ANTHROPIC_API_KEY
	// environment variable. The key is never in Describe, in replies or in
	// error texts.
	APIKey string
	// BaseURL is the API's base URL. Empty: DefaultBaseURL.
	BaseURL string
	// Model is the model used when the request's ModelParams.Model is empty.
	Model string
	// MaxTokens is the max_tokens sent when ModelParams.MaxOutputTokens is
	// zero (the API requires one). Zero: DefaultMaxTokens.
	MaxTokens int
	// DropUnsupportedParams leaves out the ModelParams the Messages API does
	// not accept (temperature, top_p, seed) instead of failing the call with
	// ErrUnsupportedParam. Describe reports the choice, so the snapshot says
	// that those parameters were not applied.
	DropUnsupportedParams bool
	// UnansweredToolResult is the text sent as the result of a tool call the
	// history does not answer (see the package doc). Empty:
	// DefaultUnansweredToolResult. The model sees it, so Describe reports it.
	UnansweredToolResult string
	// EmptyObservation is the text sent for an observation sent as user text
	// (a code or JSON-in-text action's) that has no visible character, such
	// as the empty output of `mkdir x`: the API refuses text blocks without
	// one, and leaving the observation out would merge the assistant turns
	// around it. Empty: DefaultEmptyObservation. The model sees it, so
	// Describe reports it.
	EmptyObservation string
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
	// Timeout bounds one attempt: zero means DefaultTimeout; negative leaves
	// the bound to the SDK, which refuses (without sending) a request whose
	// max_tokens it expects to take over ten minutes.
	Timeout time.Duration
	// MaxBackoff caps the backoff between retries (zero: DefaultMaxBackoff).
	MaxBackoff time.Duration
	// MaxRetryAfter is the longest Retry-After the client waits for; a longer
	// one ends the retries (zero: DefaultMaxRetryAfter).
	MaxRetryAfter time.Duration
	// Prices is the price table that costs replies. Nil: the table shipped
	// with the package (DefaultPrices) when BaseURL is Anthropic's API, else
	// none, and every cost is unknown (see the package doc).
	Prices *PriceTable
}

// Client is a polyloop.ModelClient for the Anthropic Messages API. It is safe
// for concurrent use.
type Client struct {
	sdk              anthropic.Client
	p                provider.Caller[pkg] // the key is only to redact it from server texts
	maxTokens        int
	dropUnsupported  bool
	emptyObservation string
}

var _ interface {
	polyloop.ModelClient
	polyloop.Describer
	polyloop.CostReporter
} = (*Client)(nil)

// New returns a client. It fails without an API key or with an invalid price
// table; it does not contact the server. The SDK reads nothing from the
// environment: the key, base URL and every other setting come from here.
func New(opts Options) (*Client, error) {
	c := &Client{maxTokens: opts.MaxTokens, dropUnsupported: opts.DropUnsupportedParams, emptyObservation: opts.EmptyObservation, p: provider.Caller[pkg]{Wire: wire,
		Settings: provider.Settings{
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
	c.sdk = anthropic.NewClient(
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(c.p.BaseURL),
		option.WithAPIKey(c.p.Key),
		option.WithHTTPClient(provider.SameOriginRedirects(hc)),
		option.WithMaxRetries(0),
	)
	return c, nil
}

func (c *Client) defaults() error {
	err := c.p.Defaults(provider.Defaults{KeyEnv: "ANTHROPIC_API_KEY", ErrNoKey: ErrNoAPIKey, BaseURL: DefaultBaseURL,
		Prices: shippedPrices.Shared})
	if err != nil {
		return err
	}
	if c.maxTokens < 0 {
		return fmt.Errorf("anthropicmodel: MaxTokens %d is negative", c.maxTokens)
	}
	if c.maxTokens == 0 {
		c.maxTokens = DefaultMaxTokens
	}
	if c.emptyObservation == "" {
		c.emptyObservation = DefaultEmptyObservation
	}
	if !visible(c.emptyObservation) {
		return fmt.Errorf("anthropicmodel: EmptyObservation %q has no visible character", c.emptyObservation)
	}
	return nil
}

// String describes the client without its key.
func (c *Client) String() string { return "anthropicmodel.Client(" + c.p.SafeBaseURL() + ")" }

// GoString describes the client without its key.
func (c *Client) GoString() string { return c.String() }
