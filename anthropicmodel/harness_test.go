package anthropicmodel

import (
	"github.com/polyloop/polyloop"
	"testing"

	"github.com/polyloop/polyloop/internal/providertest"
)

// harness describes the client, its wire format and its fixtures to the
// tests it shares with the other clients.
var harness = providertest.Harness[pkg]{
	Endpoint:          providertest.Endpoint{Base: "/", Path: "/v1/messages"},
	Model:             "claude-sonnet-5-5",
	KeyEnv:            "ANTHROPIC_API_KEY",
	RequestIDHeader:   "request-id",
	ErrAttemptTimeout: ErrAttemptTimeout,
	New: func(o providertest.Options) (providertest.Client, error) {
		// The fake server is not the provider's API: the shipped prices
		// apply only because the tests ask for them.
		prices, err := DefaultPrices()
		if err != nil {
			return nil, err
		}
		c, err := New(Options{BaseURL: o.BaseURL, APIKey: o.APIKey, Model: o.Model, Timeout: o.Timeout, HTTPClient: o.HTTPClient, Connections: o.Connections,
			Prices: prices})
		if err != nil {
			return nil, err
		}
		return c, nil
	},
	NewDefault: func(o providertest.Options) (providertest.Client, error) {
		return New(Options{BaseURL: o.BaseURL, APIKey: o.APIKey, Model: o.Model, Timeout: o.Timeout, HTTPClient: o.HTTPClient, Connections: o.Connections, Prices: o.Prices})
	},
	PriceTable:        PriceTableVersion,
	OK:                response{Status: 200, Fixture: "text.json", SSE: "text.sse"},
	ErrorStatus:       response{Status: 500, Fixture: "error_500.json"},
	Overloaded:        response{Status: 529, Fixture: "error_529.json"},
	RetryAfter150ms:   response{Status: 429, Fixture: "error_429.json", Header: map[string]string{"Retry-After": "0.15"}},
	Rejected:          response{Status: 401, Fixture: "error_401.json", Header: map[string]string{"request-id": "req_401"}},
	RejectedFields:    []string{`"http_status":"401"`, `"provider_type":"authentication_error"`, `"request_id":"req_401"`},
	RateLimited:       response{Status: 429, Fixture: "error_429.json", Header: map[string]string{"request-id": "req_429", "Retry-After": "2"}},
	RateLimitedFields: map[string]string{"http_status": "429", "provider_type": "rate_limit_error", "request_id": "req_429", "retry_after_ms": "2000", "attempts": "1"},
	APIErrors:         apiErrors,
	Unreadable:        map[string]error{"malformed.json": nil, "empty_object.json": errNoContent},
	Replies:           replies,
	EndToEnd:          endToEnd,
	// The input is JSON inside the body, three levels down: the SDK decodes
	// it up to 9997 levels (encoding/json's 10000 for the whole body).
	ToolCallBody:   toolUseBody,
	DeepestDecoded: 9997,
	Refused: map[string]providertest.RefusedCase{
		"reply_without_content": {Response: response{Status: 200, Fixture: "no_content_usage.json"}, InputTokens: 120, OutputTokens: 7},
		"beyond_limits": {Response: response{Status: 200, Body: toolUseBody(providertest.Nested(polyloop.MaxJSONDepth + 1))},
			InputTokens: 10, OutputTokens: 5},
	},
	Failing: map[string]response{
		"http_529":      {Status: 529, Fixture: "error_529.json"},
		"not_a_message": {Status: 200, Fixture: "empty_object.json"},
	},
	Stream: providertest.StreamCase{
		Fields:      map[string]string{"stream": "true"},
		Other:       "text_other.sse",
		RateLimited: "rate_limited.sse", ServerError: "server_error.sse",
		Incomplete: "incomplete.sse", Malformed: "malformed.sse",
		// message_start, the text block's start, a ping, then two deltas
		// (of three); the first delta is the fourth event.
		CutAfter: 5, FirstDelta: 4,
		EarlyUsage: true, // message_start reports the input tokens
	},
}

// toolUseBody is a message with one tool_use block of tool f whose input is
// args, as the API nests it: inside the body's JSON.
func toolUseBody(args string) []byte {
	return []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-5-5",` +
		`"content":[{"type":"tool_use","id":"call_1","name":"f","input":` + args + `}],` +
		`"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":5}}`)
}

// TestShared runs the tests every client shares (providertest.Run). It is
// not parallel: some of them set ANTHROPIC_API_KEY.
func TestShared(t *testing.T) { providertest.Run(t, harness) }

// response is one scripted answer of the fake server.
type response = providertest.Response

var userOnly = providertest.UserOnly

// newFakeServer serves the Messages wire format from fixtures.
func newFakeServer(t testing.TB, script ...response) *providertest.Server {
	t.Helper()
	return harness.Serve(t, script...)
}

func newTestClient(t *testing.T, baseURL string) *Client {
	t.Helper()
	return harness.Client(t, baseURL).(*Client)
}
