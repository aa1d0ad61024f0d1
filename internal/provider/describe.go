package provider

import (
	"encoding/json"

	"github.com/polyloop/polyloop"
)

// RetryConfig is how Describe reports the retry policy that Caller.Call
// applies.
type RetryConfig struct {
	// Count and BackoffMS name where the count and base backoff come from.
	Count           string   `json:"count"`
	BackoffMS       string   `json:"backoff_ms"`
	Backoff         string   `json:"backoff"`
	On              []string `json:"on"`
	MaxBackoffMS    int64    `json:"max_backoff_ms"`
	MaxRetryAfterMS int64    `json:"max_retry_after_ms"`
}

// RetryConfig describes the retry policy with these settings' bounds.
func (s *Settings) RetryConfig() RetryConfig {
	return RetryConfig{
		Count:           "model.retries",
		BackoffMS:       "model.retry_backoff_ms",
		Backoff:         "exponential, doubled per retry, no jitter, at least Retry-After",
		On:              []string{"429", "5xx", "connection"},
		MaxBackoffMS:    s.MaxBackoff.Milliseconds(),
		MaxRetryAfterMS: s.MaxRetryAfter.Milliseconds(),
	}
}

// AttemptTimeoutMS is the attempt timeout as Describe reports it: 0 for
// none.
func (s *Settings) AttemptTimeoutMS() int64 { return max(s.Timeout.Milliseconds(), 0) }

// Component is a client's Describe: its package name and config, a struct
// of plain strings and numbers (which always marshal).
func Component(pkg string, config any) polyloop.Component {
	raw, err := json.Marshal(config)
	if err != nil {
		panic(pkg + ": describing the client: " + err.Error())
	}
	return polyloop.Component{Name: pkg, Config: raw}
}
