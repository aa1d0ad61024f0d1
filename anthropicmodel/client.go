package anthropicmodel

import (
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/pricing"
)

// DefaultBaseURL is Anthropic's API.
const DefaultBaseURL = "https://api.anthropic.com/"

// DefaultTimeout bounds one attempt when Options.Timeout is zero.
const DefaultTimeout = 10 * time.Minute

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
	// HTTPClient sends the requests. Nil: a client on
	// http.DefaultTransport.
	HTTPClient *http.Client
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
	// with the package (DefaultPrices).
	Prices *PriceTable
}

// Client is a polyloop.ModelClient for the Anthropic Messages API. It is safe
// for concurrent use.
type Client struct {
	sdk             anthropic.Client
	key             string // only to redact it from server texts
	baseURL         string
	model           string
	maxTokens       int
	unanswered      string
	dropUnsupported bool
	timeout         time.Duration
	maxBackoff      time.Duration
	maxRetryAfter   time.Duration
	prices          *pricing.Table
}

var _ interface {
	polyloop.ModelClient
	polyloop.Describer
} = (*Client)(nil)

// New returns a client. It fails without an API key or with an invalid price
// table; it does not contact the server. The SDK reads nothing from the
// environment: the key, base URL and every other setting come from here.
func New(opts Options) (*Client, error) {
	c := &Client{
		key: opts.APIKey, baseURL: opts.BaseURL, model: opts.Model, maxTokens: opts.MaxTokens,
		unanswered: opts.UnansweredToolResult, dropUnsupported: opts.DropUnsupportedParams, timeout: opts.Timeout, maxBackoff: opts.MaxBackoff,
		maxRetryAfter: opts.MaxRetryAfter, prices: opts.Prices,
	}
	if err := c.defaults(); err != nil {
		return nil, err
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	c.sdk = anthropic.NewClient(
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(c.baseURL),
		option.WithAPIKey(c.key),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	)
	return c, nil
}

func (c *Client) defaults() error {
	if c.key == "" {
		c.key = os.Getenv("ANTHROPIC_API_KEY")
	}
	if c.key == "" {
		return ErrNoAPIKey
	}
	if c.baseURL == "" {
		c.baseURL = DefaultBaseURL
	}
	if c.maxTokens < 0 {
		return fmt.Errorf("anthropicmodel: MaxTokens %d is negative", c.maxTokens)
	}
	if c.maxTokens == 0 {
		c.maxTokens = DefaultMaxTokens
	}
	if c.unanswered == "" {
		c.unanswered = DefaultUnansweredToolResult
	}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	if c.maxBackoff <= 0 {
		c.maxBackoff = DefaultMaxBackoff
	}
	if c.maxRetryAfter <= 0 {
		c.maxRetryAfter = DefaultMaxRetryAfter
	}
	if c.prices == nil {
		p, err := defaultPrices()
		if err != nil {
			return err
		}
		c.prices = p
	}
	return c.prices.Validate()
}

// String describes the client without its key.
func (c *Client) String() string { return "anthropicmodel.Client(" + c.safeBaseURL() + ")" }

// GoString describes the client without its key.
func (c *Client) GoString() string { return c.String() }
