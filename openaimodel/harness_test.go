package openaimodel

import (
	"encoding/json"
	"github.com/polyloop/polyloop"
	"testing"

	"github.com/polyloop/polyloop/internal/providertest"
)

// harness describes the client, its wire format and its fixtures to the
// tests it shares with the other clients.
var harness = providertest.Harness[pkg]{
	Endpoint:          providertest.Endpoint{Base: "/v1/", Path: "/v1/chat/completions"},
	Model:             "gpt-4o",
	KeyEnv:            "OPENAI_API_KEY",
	RequestIDHeader:   "x-request-id",
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
	PriceTable:      PriceTableVersion,
	OK:              response{Status: 200, Fixture: "text.json", SSE: "text.sse"},
	ErrorStatus:     response{Status: 500, Fixture: "error_500.json"},
	Overloaded:      response{Status: 503, Fixture: "error_500.json"},
	RetryAfter150ms: response{Status: 429, Fixture: "error_429.json", Header: map[string]string{"retry-after-ms": "150"}},
	Rejected:        response{Status: 401, Fixture: "error_401.json", Header: map[string]string{"x-request-id": "req_401"}},
	RejectedFields:  []string{`"http_status":"401"`, `"provider_code":"invalid_api_key"`, `"request_id":"req_401"`},
	RateLimited:     response{Status: 429, Fixture: "error_429.json", Header: map[string]string{"x-request-id": "req_429", "Retry-After": "2"}},
	RateLimitedFields: map[string]string{"http_status": "429", "provider_type": "requests", "provider_code": "rate_limit_exceeded",
		"request_id": "req_429", "retry_after_ms": "2000", "attempts": "1"},
	APIErrors:  apiErrors,
	Unreadable: map[string]error{"malformed.json": nil, "empty_object.json": errNoChoices},
	Replies:    replies,
	EndToEnd:   endToEnd,
	// The arguments are a JSON string: the SDK decodes them at any depth
	// encoding/json accepts.
	ToolCallBody:   toolCallBody,
	DeepestDecoded: 10000,
	Refused: map[string]providertest.RefusedCase{
		"reply_without_content": {Response: response{Status: 200, Fixture: "no_choices_usage.json"}, InputTokens: 120, OutputTokens: 7},
		"beyond_limits": {Response: response{Status: 200, Body: toolCallBody(providertest.Nested(polyloop.MaxJSONDepth + 1))},
			InputTokens: 10, OutputTokens: 5},
	},
	Failing: map[string]response{
		"no_choices": {Status: 200, Fixture: "empty_object.json"},
	},
	Stream: providertest.StreamCase{
		Fields:      map[string]string{"stream": "true", "stream_options": `{"include_usage":true}`},
		Other:       "text_other.sse",
		RateLimited: "rate_limited.sse", ServerError: "server_error.sse",
		Incomplete: "incomplete.sse", Malformed: "malformed.sse",
		// The role chunk, then two deltas (of three); the first delta is
		// in the second event.
		CutAfter: 3, FirstDelta: 2,
	},
}

// toolCallBody is a completion with one call of tool f whose arguments are
// args, as the API sends them: a JSON string.
func toolCallBody(args string) []byte {
	quoted, err := json.Marshal(args)
	if err != nil {
		panic(err) // a string always marshals
	}
	return []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",` +
		`"function":{"name":"f","arguments":` + string(quoted) + `}}]},"finish_reason":"tool_calls"}],` +
		`"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
}

// TestShared runs the tests every client shares (providertest.Run). It is
// not parallel: some of them set OPENAI_API_KEY.
func TestShared(t *testing.T) { providertest.Run(t, harness) }

// response is one scripted answer of the fake server.
type response = providertest.Response

var userOnly = providertest.UserOnly

// newFakeServer serves the Chat Completions wire format from fixtures.
func newFakeServer(t testing.TB, script ...response) *providertest.Server {
	t.Helper()
	return harness.Serve(t, script...)
}

func newTestClient(t *testing.T, baseURL string) *Client {
	t.Helper()
	return harness.Client(t, baseURL).(*Client)
}
