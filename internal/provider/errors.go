package provider

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/polyloop/polyloop"
)

// Package names a client package. A client declares an empty type whose
// Name is its package name ("openaimodel") and instantiates the error types
// with it: its errors are then types of their own, and their texts start
// with its name.
type Package interface{ Name() string }

func name[P Package]() string {
	var p P
	return p.Name()
}

// APIError is an error status returned by the server. Its fields come from
// the response; Message has the API key redacted.
type APIError[P Package] struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Type, Code and Param are the provider's error type, code and
	// parameter, when given (e.g. "invalid_request_error",
	// "invalid_api_key", "messages"). Which of them a provider gives is
	// documented by its client.
	Type  string
	Code  string
	Param string
	// Message is the provider's message (or the start of a body that is not
	// JSON), bounded and with the API key redacted.
	Message string
	// RequestID is the server's id of the request, when given.
	RequestID string
	// RetryAfter is the server's Retry-After (or retry-after-ms); 0 when not
	// given.
	RetryAfter time.Duration
	// Attempts is how many requests the call made, this one included.
	Attempts int
	// InStream marks an error that came as an event of a stream whose HTTP
	// status was a success: StatusCode is then the status the provider
	// documents for the error's type (429 for a rate limit), 0 when it
	// documents none.
	InStream bool
}

func (e *APIError[P]) Error() string {
	s := fmt.Sprintf("%s: HTTP %d", name[P](), e.StatusCode)
	if t := http.StatusText(e.StatusCode); t != "" {
		s += " " + t
	}
	if e.InStream {
		s = name[P]() + ": error event in the stream"
		if e.StatusCode != 0 {
			s += fmt.Sprintf(" (as HTTP %d)", e.StatusCode)
		}
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
func (e *APIError[P]) Retryable() bool {
	return e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500
}

// DiagFields gives the error's fields to package diag.
func (e *APIError[P]) DiagFields() map[string]string {
	f := map[string]string{"http_status": strconv.Itoa(e.StatusCode)}
	put(f, "provider_type", e.Type)
	put(f, "provider_code", e.Code)
	put(f, "provider_param", e.Param)
	put(f, "request_id", e.RequestID)
	if e.RetryAfter > 0 {
		f["retry_after_ms"] = strconv.FormatInt(e.RetryAfter.Milliseconds(), 10)
	}
	if e.Attempts > 0 {
		f["attempts"] = strconv.Itoa(e.Attempts)
	}
	if e.InStream {
		f["in_stream"] = "true"
	}
	return f
}

func (e *APIError[P]) setAttempts(n int) { e.Attempts = n }

func (e *APIError[P]) retryWait() (time.Duration, bool) { return e.RetryAfter, e.Retryable() }

// ConnectionError is a call that got no complete response: the connection
// was refused or dropped, the body was cut short, or the attempt timed out.
// Unwrap gives the cause.
type ConnectionError[P Package] struct {
	Attempts int
	Err      error
}

func (e *ConnectionError[P]) Error() string {
	return name[P]() + ": connection failed: " + e.Err.Error() + attemptsSuffix(e.Attempts)
}

// Unwrap returns the cause.
func (e *ConnectionError[P]) Unwrap() error { return e.Err }

// DiagFields gives the error's fields to package diag.
func (e *ConnectionError[P]) DiagFields() map[string]string {
	return map[string]string{"failure": "connection", "attempts": strconv.Itoa(e.Attempts)}
}

func (e *ConnectionError[P]) setAttempts(n int) { e.Attempts = n }

func (e *ConnectionError[P]) retryWait() (time.Duration, bool) { return 0, true }

// ResponseError is a response that could not be understood: a success
// status whose body is not what the API answers (malformed JSON, a body
// without the reply, too large), or whose reply is beyond the log's limits
// (CheckReply; Err then wraps polyloop.ErrJSONLimit). It is not retried.
//
// The server answered with a success status, so the call may have been
// billed: ResponseError is a polyloop.UsageCarrier, and the library keeps
// its usage on the failed call's result and counts it in the run's totals.
type ResponseError[P Package] struct {
	StatusCode int
	RequestID  string
	Attempts   int
	// Usage is what the response reports the call consumed, with its cost
	// when a price is known: set when the body could be read (a reply
	// refused for what it holds), nil when it could not.
	Usage *polyloop.Usage
	Err   error
}

// CallUsage implements polyloop.UsageCarrier: Usage, or, when the body
// could not be read, a Usage with no tokens and TokensUnknown — which the
// totals read as tokens and cost unknown (a call answered and perhaps
// billed), never as a free call.
func (e *ResponseError[P]) CallUsage() polyloop.Usage {
	if e.Usage == nil {
		return polyloop.Usage{TokensUnknown: true}
	}
	return *e.Usage
}

func (e *ResponseError[P]) Error() string {
	what := "unreadable response"
	if e.beyondLimits() {
		what = "reply beyond the log's limits"
	}
	s := fmt.Sprintf("%s: %s (HTTP %d", name[P](), what, e.StatusCode)
	if e.RequestID != "" {
		s += ", request " + e.RequestID
	}
	return s + "): " + e.Err.Error() + attemptsSuffix(e.Attempts)
}

// Unwrap returns the cause.
func (e *ResponseError[P]) Unwrap() error { return e.Err }

// DiagFields gives the error's fields to package diag.
func (e *ResponseError[P]) DiagFields() map[string]string {
	failure := "bad_response"
	if e.beyondLimits() {
		failure = "reply_beyond_limits"
	}
	f := map[string]string{"failure": failure, "http_status": strconv.Itoa(e.StatusCode),
		"attempts": strconv.Itoa(e.Attempts)}
	put(f, "request_id", e.RequestID)
	return f
}

func (e *ResponseError[P]) setAttempts(n int) { e.Attempts = n }

// beyondLimits reports whether the reply was refused for the log's limits.
func (e *ResponseError[P]) beyondLimits() bool { return errors.Is(e.Err, polyloop.ErrJSONLimit) }

// counted is an error that reports how many attempts the call made.
type counted interface{ setAttempts(n int) }

// retryable is an error the retry policy may retry: ok says whether its
// kind is retried, after the wait the server asked for (0 when none).
type retryable interface {
	retryWait() (after time.Duration, ok bool)
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

// DiagType names the error for package diag as its client's type,
// "*openaimodel.APIError" rather than the generic instantiation.
func (e *APIError[P]) DiagType() string { return "*" + name[P]() + ".APIError" }

// DiagType names the error for package diag as its client's type.
func (e *ConnectionError[P]) DiagType() string { return "*" + name[P]() + ".ConnectionError" }

// DiagType names the error for package diag as its client's type.
func (e *ResponseError[P]) DiagType() string { return "*" + name[P]() + ".ResponseError" }

// UsageError is a failed call that consumed what its attempts reported, or
// — with Usage.TokensUnknown and a nil CostUSD — that may have been billed
// for more: an attempt's request was sent and then it timed out, lost its
// connection or had its reply cut short (a stream broken after its deltas
// included). Err is the failure. It implements polyloop.UsageCarrier, so
// that the library keeps the usage on the failed call's result and the
// run's totals count it (as tokens and cost unknown when TokensUnknown is
// set).
type UsageError[P Package] struct {
	Usage polyloop.Usage
	Err   error
}

func (e *UsageError[P]) Error() string {
	switch {
	case e.Usage.Tokens() == 0:
		return e.Err.Error() + " (the call may have been billed; its usage is unknown)"
	case e.Usage.TokensUnknown:
		return fmt.Sprintf("%s (the call consumed at least %d input and %d output tokens; its cost is unknown)", e.Err.Error(), e.Usage.InputTokens, e.Usage.OutputTokens)
	}
	return fmt.Sprintf("%s (the call consumed %d input and %d output tokens)", e.Err.Error(), e.Usage.InputTokens, e.Usage.OutputTokens)
}

// Unwrap returns the failure.
func (e *UsageError[P]) Unwrap() error { return e.Err }

// CallUsage implements polyloop.UsageCarrier.
func (e *UsageError[P]) CallUsage() polyloop.Usage { return e.Usage }

// DiagFields gives the usage to package diag.
func (e *UsageError[P]) DiagFields() map[string]string {
	f := map[string]string{
		"input_tokens":  strconv.FormatInt(e.Usage.InputTokens, 10),
		"output_tokens": strconv.FormatInt(e.Usage.OutputTokens, 10),
	}
	if e.Usage.CostUSD != nil {
		f["cost_usd"] = strconv.FormatFloat(*e.Usage.CostUSD, 'g', -1, 64)
	}
	if e.Usage.TokensUnknown {
		f["tokens_unknown"] = "true"
	}
	return f
}

// DiagType names the error for package diag as its client's type.
func (e *UsageError[P]) DiagType() string { return "*" + name[P]() + ".UsageError" }
