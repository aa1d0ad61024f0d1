package anthropicmodel

import (
	"net/http"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/polylooptest"
)

// contractClient is a client of baseURL whose idle connections are closed
// when the test ends.
func contractClient(t testing.TB, baseURL string) polyloop.ModelClient {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	c, err := New(Options{BaseURL: baseURL, APIKey: "test-key", Model: "claude-sonnet-5-5", HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func serving(script ...response) func(t testing.TB) polyloop.ModelClient {
	return func(t testing.TB) polyloop.ModelClient {
		return contractClient(t, newFakeServer(t, script...).url())
	}
}

// TestContract runs the polylooptest ModelClient contract kit. It is not
// parallel: the kit's leak checks count the process's goroutines.
func TestContract(t *testing.T) {
	polylooptest.TestModelClient(t, polylooptest.ModelClientHarness{
		New: serving(response{status: 200, fixture: "text.json"}),
		Failing: map[string]func(t testing.TB) polyloop.ModelClient{
			"http_400":           serving(response{status: 400, fixture: "error_400.json"}),
			"http_401":           serving(response{status: 401, fixture: "error_401.json"}),
			"http_429":           serving(response{status: 429, fixture: "error_429.json"}),
			"http_500":           serving(response{status: 500, fixture: "error_500.json"}),
			"http_529":           serving(response{status: 529, fixture: "error_529.json"}),
			"http_502_html":      serving(response{status: 502, fixture: "error_502.html"}),
			"malformed_body":     serving(response{status: 200, fixture: "malformed.json"}),
			"not_a_message":      serving(response{status: 200, fixture: "empty_object.json"}),
			"body_cut_short":     serving(response{fixture: "text.json", cutShort: true}),
			"connection_refused": func(t testing.TB) polyloop.ModelClient { return contractClient(t, closedURL(t)) },
		},
		NewHanging: serving(response{stall: true}),
	})
}
