package openaimodel

import (
	"errors"

	"github.com/polyloop/polyloop/internal/provider"
)

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrNoAPIKey is returned by New when the client would call OpenAI's own
	// API (BaseURL empty or on api.openai.com) and neither Options.APIKey
	// nor OPENAI_API_KEY gives a key.
	ErrNoAPIKey = errors.New("openaimodel: no API key for OpenAI's API: set Options.APIKey or OPENAI_API_KEY (or set BaseURL to a server that needs none)")
	// ErrNoModel is returned when neither the request's ModelParams.Model nor
	// Options.Model names a model.
	ErrNoModel = errors.New("openaimodel: no model: set ModelParams.Model or Options.Model")
	// ErrAttemptTimeout is the cause of a *ConnectionError when one attempt
	// outlived Options.Timeout.
	ErrAttemptTimeout = errors.New("openaimodel: attempt timed out")
	// ErrBadRequest marks a request that could not be built from the
	// library's ModelRequest (an unknown role, a tool schema that is not a
	// JSON object); nothing was sent.
	ErrBadRequest = errors.New("openaimodel: cannot build the request")
)

// pkg instantiates the shared error types as this package's own.
type pkg struct{}

func (pkg) Name() string { return "openaimodel" }

// APIError is an error status returned by the server: the HTTP status; the
// provider's error Type, Code and Param, when given (e.g.
// "invalid_request_error", "invalid_api_key", "messages"); the Message,
// bounded and with the API key redacted; the x-request-id header as
// RequestID; the server's RetryAfter; and how many Attempts the call made.
// It implements diag.Fielder.
type APIError = provider.APIError[pkg]

// ConnectionError is a call that got no complete response: the connection
// was refused or dropped, the body was cut short, or the attempt timed out
// (ErrAttemptTimeout). Unwrap gives the cause.
type ConnectionError = provider.ConnectionError[pkg]

// ResponseError is a response that could not be understood: a success
// status whose body is not a chat completion (malformed JSON, no choices, too large),
// or whose reply is beyond the log's limits. It is not retried. It carries
// what the response says the call consumed (polyloop.UsageCarrier; Usage
// nil when the body could not be read): the run keeps that usage, and a
// body it could not read leaves the run's tokens and cost unknown, never
// free.
type ResponseError = provider.ResponseError[pkg]

// UsageError is a failed call that consumed tokens: Usage is what its
// attempts reported (a nil CostUSD when part of it is unknown;
// TokensUnknown, and no tokens at all when nothing was reported, when an
// attempt was sent and then timed out, lost its connection or was cut
// short: billed for an amount it never reported), Err the failure (an
// *APIError, *ConnectionError or *ResponseError). It implements
// polyloop.UsageCarrier: the run's log keeps the usage on the failed call's
// result and its totals count it.
type UsageError = provider.UsageError[pkg]

// ErrIncompleteStream is the cause of a *ConnectionError for a stream that
// ended before the reply was complete.
var ErrIncompleteStream = provider.ErrIncompleteStream
