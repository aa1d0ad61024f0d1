package provider

import (
	"fmt"
	"net/http"
)

// maxRedirects is how many same-origin redirects a call follows, as
// net/http's default does.
const maxRedirects = 10

// SameOriginRedirects returns a copy of hc that follows a redirect only on
// the origin of the request (scheme, host and port). A redirect to another
// origin fails the attempt with a *RedirectError, which Classify turns
// into a failure of the call that names the redirect and is not retried:
// a provider's API does not send its clients elsewhere, and a server or
// proxy that does must not make the client send the request — the
// conversation, a key in a header — to a host it was not configured with.
// Both clients follow this one rule. hc's own CheckRedirect, if any, still
// decides the same-origin ones.
func SameOriginRedirects(hc *http.Client) *http.Client {
	c := *hc
	next := hc.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if from := via[0].URL; req.URL.Scheme != from.Scheme || req.URL.Host != from.Host {
			e := &RedirectError{To: req.URL.Scheme + "://" + req.URL.Host}
			if req.Response != nil {
				e.StatusCode = req.Response.StatusCode
			}
			return e
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		return nil
	}
	return &c
}

// RedirectError is a redirect to another origin, not followed. To is the
// origin only, never the rest of the URL (which may carry a token).
type RedirectError struct {
	StatusCode int
	To         string
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("the server redirected the request (HTTP %d) to another origin, %s, where it is not sent", e.StatusCode, e.To)
}
