package providertest

import (
	"strings"
	"testing"

	"github.com/polyloop/polyloop/internal/provider"
)

// CheckRedirects checks the one rule both clients follow: a redirect to
// another origin (scheme, host or port) is refused — the call fails at
// once, without a retry, saying so, and nothing reaches the other server —
// while a redirect on the same origin is followed.
func CheckRedirects[P provider.Package](t *testing.T, h Harness[P]) {
	t.Run("to another origin", func(t *testing.T) {
		t.Parallel()
		other := h.Serve(t, h.OK)
		elsewhere := strings.TrimSuffix(other.URL(), h.Endpoint.Base) + h.Endpoint.Path
		srv := h.Serve(t, Response{Status: 307, Header: map[string]string{"Location": elsewhere}, Body: []byte("{}")})
		_, err := h.Call(t, h.Client(t, srv.URL()), 2)
		if err == nil || !strings.Contains(err.Error(), "redirect") {
			t.Errorf("err = %v; want the call refused for its redirect", err)
		}
		if other.Count() != 0 || srv.Count() != 1 {
			t.Errorf("%d requests reached the other origin, %d the client's server; want 0 and 1 (no retry)", other.Count(), srv.Count())
		}
	})
	t.Run("on the same origin", func(t *testing.T) {
		t.Parallel()
		srv := h.Serve(t, Response{Status: 307, Header: map[string]string{"Location": h.Endpoint.Path}, Body: []byte("{}")}, h.OK)
		if _, err := h.Call(t, h.Client(t, srv.URL()), 0); err != nil || srv.Count() != 2 {
			t.Errorf("err = %v after %d requests; want the redirect followed", err, srv.Count())
		}
	})
}
