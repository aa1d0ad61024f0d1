package anthropicmodel

import (
	"errors"

	"github.com/polyloop/polyloop/internal/provider"
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

// pkg instantiates the shared error types as this package's own.
type pkg struct{}

func (pkg) Name() string { return "anthropicmodel" }

// APIError is an error status returned by the server: the HTTP status; the
// provider's error Type (e.g. "rate_limit_error", "overloaded_error") and
// Code (error.details.error_code), when given (Param is never set); the
// Message, bounded and with the API key redacted; the request-id header (or
// the body's request_id) as RequestID; the server's RetryAfter; and how many
// Attempts the call made. It implements diag.Fielder.
type APIError = provider.APIError[pkg]

// ConnectionError is a call that got no complete response: the connection
// was refused or dropped, the body was cut short, or the attempt timed out
// (ErrAttemptTimeout). Unwrap gives the cause.
type ConnectionError = provider.ConnectionError[pkg]

// ResponseError is a response that could not be understood: a success
// status whose body is not a message (malformed JSON, no content, too large),
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
