package mcpexec

import (
	"mime"
	"net/http"
)

// wrapBodies returns a copy of hc (http.DefaultClient when nil) whose
// transport hands every response it receives to wrap, with the response's
// media type, before the caller sees it; hc itself is not changed. The
// streamable HTTP transport keeps its connection to itself, so what must see
// the server's bytes is put below it, in the HTTP client.
func wrapBodies(hc *http.Client, wrap func(res *http.Response, mediaType string)) *http.Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	c := *hc
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = &bodyTransport{base: base, wrap: wrap}
	return &c
}

type bodyTransport struct {
	base http.RoundTripper
	wrap func(*http.Response, string)
}

func (t *bodyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(req)
	if err != nil {
		return res, err
	}
	mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	t.wrap(res, mt)
	return res, nil
}
