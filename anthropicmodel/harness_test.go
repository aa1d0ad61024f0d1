package anthropicmodel

import (
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/providertest"
)

// harness describes the client to the tests shared with the other clients.
var harness = providertest.Harness[pkg]{
	Endpoint:          providertest.Endpoint{Base: "/", Path: "/v1/messages"},
	Model:             "claude-sonnet-5-5",
	KeyEnv:            "ANTHROPIC_API_KEY",
	RequestIDHeader:   "request-id",
	ErrAttemptTimeout: ErrAttemptTimeout,
	New: func(o providertest.Options) (providertest.Client, error) {
		c, err := New(Options{BaseURL: o.BaseURL, APIKey: o.APIKey, Model: o.Model, Timeout: o.Timeout, HTTPClient: o.HTTPClient})
		if err != nil {
			return nil, err
		}
		return c, nil
	},
	ErrorStatus: response{Status: 500, Fixture: "error_500.json"},
	OK:          response{Status: 200, Fixture: "text.json"},
}

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

func call(t *testing.T, c *Client, retries int) (polyloop.ModelReply, error) {
	t.Helper()
	return harness.Call(t, c, retries)
}
