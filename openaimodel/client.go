package openaimodel

import (
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/pricing"
)

// DefaultBaseURL is OpenAI's API.
const DefaultBaseURL = "https://api.openai.com/v1/"

// DefaultTimeout bounds one attempt when Options.Timeout is zero.
const DefaultTimeout = 10 * time.Minute

// Options configure a Client. The zero value talks to OpenAI with the key
// from OPENAI_API_KEY.
type Options struct {
	// APIKey authenticates the client. Empty: the OPENAI_API_KEY environment
	// variable; servers that need no key (Ollama, llama.cpp) accept none.
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
	// HTTPClient sends the requests. Nil: a client on
	// http.DefaultTransport.
	HTTPClient *http.Client
	// Timeout bounds one attempt: zero means DefaultTimeout, negative means
	// no bound besides the call's context.
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

// Client is a polyloop.ModelClient for an OpenAI-compatible Chat
// Completions API. It is safe for concurrent use.
type Client struct {
	sdk            openai.Client
	key            string // only to redact it from server texts
	baseURL        string
	model          string
	maxTokensField string
	unanswered     string
	timeout        time.Duration
	maxBackoff     time.Duration
	maxRetryAfter  time.Duration
	prices         *pricing.Table
}

var _ interface {
	polyloop.ModelClient
	polyloop.Describer
} = (*Client)(nil)

// New returns a client. It fails for an unknown MaxTokensField or an
// invalid price table; it does not contact the server.
func New(opts Options) (*Client, error) {
	c := &Client{
		key: opts.APIKey, baseURL: opts.BaseURL, model: opts.Model, maxTokensField: opts.MaxTokensField,
		unanswered: opts.UnansweredToolResult, timeout: opts.Timeout, maxBackoff: opts.MaxBackoff,
		maxRetryAfter: opts.MaxRetryAfter, prices: opts.Prices,
	}
	if err := c.defaults(); err != nil {
		return nil, err
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	c.sdk = openai.NewClient(
		option.WithBaseURL(c.baseURL),
		option.WithAPIKey(c.key),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	)
	return c, nil
}

func (c *Client) defaults() error {
	if c.key == "" {
		c.key = os.Getenv("OPENAI_API_KEY")
	}
	if c.baseURL == "" {
		c.baseURL = DefaultBaseURL
	}
	switch c.maxTokensField {
	case "":
		c.maxTokensField = MaxCompletionTokens
	case MaxCompletionTokens, MaxTokens:
	default:
		return fmt.Errorf("openaimodel: MaxTokensField %q is neither %q nor %q", c.maxTokensField, MaxCompletionTokens, MaxTokens)
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
func (c *Client) String() string { return "openaimodel.Client(" + c.safeBaseURL() + ")" }

// GoString describes the client without its key.
func (c *Client) GoString() string { return c.String() }
