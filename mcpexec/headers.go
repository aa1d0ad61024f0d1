package mcpexec

import (
	"net/http"
	"slices"
)

// withHeaders returns a client that sets headers on every request, through
// its transport; hc itself is not changed. Without headers it returns hc.
func withHeaders(hc *http.Client, headers http.Header) *http.Client {
	if len(headers) == 0 {
		return hc
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	c := *hc
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = &headerTransport{base: base, headers: headers.Clone()}
	return &c
}

// headerTransport sets its headers on each request before handing it on.
type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
}

// RoundTrip sends a copy of req with the headers set (a RoundTripper must
// not modify the request it is given).
func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	for name, values := range t.headers {
		r.Header[http.CanonicalHeaderKey(name)] = slices.Clone(values)
	}
	return t.base.RoundTrip(r)
}
