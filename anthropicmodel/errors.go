package anthropicmodel

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrNoAPIKey is returned by New when neither Options.APIKey nor
	// ANTHROPIC_API_KEY gives a key.
	ErrNoAPIKey = errors.New("anthropicmodel: no API key: set Options.APIKey or ANTHROPIC_API_KEY")
	// ErrUnsupportedParam is returned, before anything is sent, for a
	// request whose ModelParams set temperature, top_p or seed: the Messages
	// API has no such field (see Options.DropUnsupportedParams).
	ErrUnsupportedParam = errors.New("anthropicmodel: the Messages API does not accept these parameters")
	// ErrNoModel is returned when neither the request's ModelParams.Model nor
	// Options.Model names a model.
	ErrNoModel = errors.New("anthropicmodel: no model: set ModelParams.Model or Options.Model")
	// ErrAttemptTimeout is the cause of a *ConnectionError when one attempt
	// outlived Options.Timeout.
	ErrAttemptTimeout = errors.New("anthropicmodel: attempt timed out")
	// ErrBadRequest marks a request that could not be built from the
	// library's ModelRequest (an unknown role, a tool schema that is not a
	// JSON object) or that the SDK refused; nothing was sent.
	ErrBadRequest = errors.New("anthropicmodel: cannot build the request")
)

// APIError is an error status returned by the server. Its fields come from
// the response; Message has the API key redacted.
type APIError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Type is the provider's error type (e.g. "rate_limit_error",
	// "overloaded_error"); Code is error.details.error_code, when given.
	Type string
	Code string
	// Message is the provider's message (or the start of a body that is not
	// JSON), bounded and with the API key redacted.
	Message string
	// RequestID is the request-id header (or the body's request_id), when given.
	RequestID string
	// RetryAfter is the server's Retry-After (or retry-after-ms); 0 when not
	// given.
	RetryAfter time.Duration
	// Attempts is how many requests the call made, this one included.
	Attempts int
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("anthropicmodel: HTTP %d", e.StatusCode)
	if t := http.StatusText(e.StatusCode); t != "" {
		s += " " + t
	}
	if e.Type != "" {
		s += " (" + e.Type
		if e.Code != "" {
			s += ", " + e.Code
		}
		s += ")"
	} else if e.Code != "" {
		s += " (" + e.Code + ")"
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.RequestID != "" {
		s += " [request " + e.RequestID + "]"
	}
	return s + attemptsSuffix(e.Attempts)
}

// Retryable reports whether the retry policy retries this status: 429 and
// 5xx.
func (e *APIError) Retryable() bool {
	return e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500
}

// DiagFields gives the error's fields to package diag.
func (e *APIError) DiagFields() map[string]string {
	f := map[string]string{"http_status": strconv.Itoa(e.StatusCode)}
	put(f, "provider_type", e.Type)
	put(f, "provider_code", e.Code)
	put(f, "request_id", e.RequestID)
	if e.RetryAfter > 0 {
		f["retry_after_ms"] = strconv.FormatInt(e.RetryAfter.Milliseconds(), 10)
	}
	if e.Attempts > 0 {
		f["attempts"] = strconv.Itoa(e.Attempts)
	}
	return f
}

// ConnectionError is a call that got no complete response: the connection
// was refused or dropped, the body was cut short, or the attempt timed out.
// Unwrap gives the cause.
type ConnectionError struct {
	Attempts int
	Err      error
}

func (e *ConnectionError) Error() string {
	return "anthropicmodel: connection failed: " + e.Err.Error() + attemptsSuffix(e.Attempts)
}

// Unwrap returns the cause.
func (e *ConnectionError) Unwrap() error { return e.Err }

// DiagFields gives the error's fields to package diag.
func (e *ConnectionError) DiagFields() map[string]string {
	return map[string]string{"failure": "connection", "attempts": strconv.Itoa(e.Attempts)}
}

// ResponseError is a response that could not be understood: a success
// status whose body is not a message (malformed JSON, no content, too
// large). It is not retried.
type ResponseError struct {
	StatusCode int
	RequestID  string
	Attempts   int
	Err        error
}

func (e *ResponseError) Error() string {
	s := fmt.Sprintf("anthropicmodel: unreadable response (HTTP %d", e.StatusCode)
	if e.RequestID != "" {
		s += ", request " + e.RequestID
	}
	return s + "): " + e.Err.Error() + attemptsSuffix(e.Attempts)
}

// Unwrap returns the cause.
func (e *ResponseError) Unwrap() error { return e.Err }

// DiagFields gives the error's fields to package diag.
func (e *ResponseError) DiagFields() map[string]string {
	f := map[string]string{"failure": "bad_response", "http_status": strconv.Itoa(e.StatusCode),
		"attempts": strconv.Itoa(e.Attempts)}
	put(f, "request_id", e.RequestID)
	return f
}

// setAttempts records the number of attempts on the errors that carry it.
func setAttempts(err error, n int) {
	var a *APIError
	var c *ConnectionError
	var r *ResponseError
	switch {
	case errors.As(err, &a):
		a.Attempts = n
	case errors.As(err, &c):
		c.Attempts = n
	case errors.As(err, &r):
		r.Attempts = n
	}
}

func attemptsSuffix(n int) string {
	if n <= 1 {
		return ""
	}
	return fmt.Sprintf(" (after %d attempts)", n)
}

func put(m map[string]string, k, v string) {
	if v != "" {
		m[k] = v
	}
}
