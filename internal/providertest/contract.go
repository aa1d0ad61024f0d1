package providertest

import (
	"net/http"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/provider"
	"github.com/polyloop/polyloop/polylooptest"
)

// standardFailures are the failure modes every client has, from fixtures
// of the same names under each client's testdata/responses.
var standardFailures = map[string]Response{
	"http_400":       {Status: 400, Fixture: "error_400.json"},
	"http_401":       {Status: 401, Fixture: "error_401.json"},
	"http_429":       {Status: 429, Fixture: "error_429.json"},
	"http_500":       {Status: 500, Fixture: "error_500.json"},
	"http_502_html":  {Status: 502, Fixture: "error_502.html"},
	"malformed_body": {Status: 200, Fixture: "malformed.json"},
}

// TestContract runs the polylooptest ModelClient contract kit against fake
// servers: answering h.OK, hanging, and failing in each of the standard
// ways (error statuses from error_400.json, error_401.json, error_429.json,
// error_500.json and error_502.html; malformed.json), the client's own
// (failing, named as the kit reports them), a body cut short and a refused
// connection; and h.Refused's replies, refused with their usage. It must not run in parallel: the kit's leak checks count the
// process's goroutines.
func TestContract[P provider.Package](t *testing.T, h Harness[P], failing map[string]Response) {
	modes := map[string]func(t testing.TB) polyloop.ModelClient{
		"body_cut_short":     h.serving(Response{Fixture: h.OK.Fixture, CutShort: true}),
		"connection_refused": func(t testing.TB) polyloop.ModelClient { return h.contractClient(t, ClosedURL(t, h.Endpoint)) },
	}
	for name, resp := range standardFailures {
		modes[name] = h.serving(resp)
	}
	for name, resp := range failing {
		modes[name] = h.serving(resp)
	}
	refusing := map[string]polylooptest.RefusedReply{}
	for name, rc := range h.Refused {
		refusing[name] = polylooptest.RefusedReply{New: h.serving(rc.Response),
			Usage: polyloop.Usage{InputTokens: rc.InputTokens, OutputTokens: rc.OutputTokens}}
	}
	polylooptest.TestModelClient(t, polylooptest.ModelClientHarness{
		New:        h.serving(h.OK),
		Failing:    modes,
		NewHanging: h.serving(Response{Stall: true}),
		Refusing:   refusing,
	})
}

// contractClient is a client of baseURL whose idle connections are closed
// when the test ends.
func (h *Harness[P]) contractClient(t testing.TB, baseURL string) polyloop.ModelClient {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return h.must(t, Options{BaseURL: baseURL, APIKey: "test-key", Model: h.Model, HTTPClient: &http.Client{Transport: tr}})
}

// serving gives clients of a fresh fake server answering with script.
func (h *Harness[P]) serving(script ...Response) func(t testing.TB) polyloop.ModelClient {
	return func(t testing.TB) polyloop.ModelClient {
		return h.contractClient(t, h.Serve(t, script...).URL())
	}
}
