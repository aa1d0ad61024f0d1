package anthropicmodel

import (
	"encoding/json"
	"net/url"

	"github.com/polyloop/polyloop"
)

// config is what Describe puts in the snapshot: everything about the client
// that changes what the model sees or how calls are made. Never the key.
type config struct {
	Provider             string      `json:"provider"`
	BaseURL              string      `json:"base_url"`
	DefaultModel         string      `json:"default_model,omitempty"`
	DefaultMaxTokens     int         `json:"default_max_tokens"`
	UnansweredToolResult string      `json:"unanswered_tool_result"`
	UnsupportedParams    string      `json:"unsupported_params"`
	PriceTable           string      `json:"price_table"`
	AttemptTimeoutMS     int64       `json:"attempt_timeout_ms,omitempty"`
	Retry                retryConfig `json:"retry"`
}

type retryConfig struct {
	// Count and BackoffMS name where the count and base backoff come from.
	Count           string   `json:"count"`
	BackoffMS       string   `json:"backoff_ms"`
	Backoff         string   `json:"backoff"`
	On              []string `json:"on"`
	MaxBackoffMS    int64    `json:"max_backoff_ms"`
	MaxRetryAfterMS int64    `json:"max_retry_after_ms"`
}

// Describe identifies the client in the run's snapshot: provider, base URL,
// price table version, request shaping (including the parameters the API
// has no field for, which are not sent) and retry policy. It never includes
// the API key.
func (c *Client) Describe() polyloop.Component {
	cfg := config{
		Provider:             "anthropic",
		BaseURL:              c.safeBaseURL(),
		DefaultModel:         c.model,
		DefaultMaxTokens:     c.maxTokens,
		UnansweredToolResult: c.unanswered,
		UnsupportedParams:    c.unsupportedPolicy(),
		PriceTable:           c.prices.Version,
		AttemptTimeoutMS:     max(c.timeout.Milliseconds(), 0),
		Retry: retryConfig{
			Count:           "model.retries",
			BackoffMS:       "model.retry_backoff_ms",
			Backoff:         "exponential, doubled per retry, no jitter, at least Retry-After",
			On:              []string{"429", "5xx", "connection"},
			MaxBackoffMS:    c.maxBackoff.Milliseconds(),
			MaxRetryAfterMS: c.maxRetryAfter.Milliseconds(),
		},
	}
	raw, err := json.Marshal(cfg)
	if err != nil { // plain strings and numbers always marshal
		panic("anthropicmodel: describing the client: " + err.Error())
	}
	return polyloop.Component{Name: "anthropicmodel", Config: raw}
}

// unsupportedPolicy says what happens to temperature, top_p and seed.
func (c *Client) unsupportedPolicy() string {
	if c.dropUnsupported {
		return "temperature, top_p and seed are not sent"
	}
	return "temperature, top_p and seed fail the call"
}

// safeBaseURL is the base URL without user info, and with the key redacted
// should it appear in it.
func (c *Client) safeBaseURL() string {
	s := c.baseURL
	if u, err := url.Parse(s); err == nil && u.User != nil {
		u.User = nil
		s = u.String()
	}
	return redact(s, c.key)
}
