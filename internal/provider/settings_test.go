package provider

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

func TestSafeBaseURL(t *testing.T) {
	t.Parallel()
	const key = "k-9f8e7d6c5b4a3928"
	for _, tt := range []struct{ base, want string }{
		{"https://api.openai.com/v1/", "https://api.openai.com/v1/"},
		{"https://u:hunter22@gw.example/v1", "https://gw.example/v1"},
		{"https://gw.example/v1?api_key=" + key, "https://gw.example/v1?api_key=REDACTED"},
		{"https://gw.example/v1?api-version=2024-06-01&code=abc%3D&flag", "https://gw.example/v1?api-version=REDACTED&code=REDACTED&flag"},
		{"https://gw.example/" + key + "/v1", "https://gw.example/[REDACTED]/v1"},
		{"https://gw.example/v1?x=1#frag", "https://gw.example/v1?x=REDACTED#frag"},
		{"http://[::1:bad/v1?token=" + key, "http://[::1:bad/v1"},
	} {
		s := Settings{BaseURL: tt.base, Key: key}
		got := s.SafeBaseURL()
		if strings.Contains(got, key) || strings.Contains(got, "hunter22") {
			t.Errorf("SafeBaseURL(%q) = %q holds a secret", tt.base, got)
		}
		if got != tt.want {
			t.Errorf("SafeBaseURL(%q) = %q, want %q", tt.base, got, tt.want)
		}
	}
}

// TestConnectionErrorURLRedacted checks that the URL of a failed connection,
// which the error text names, loses its query values: the text reaches the
// run's records as a diagnostic.
func TestConnectionErrorURLRedacted(t *testing.T) {
	t.Parallel()
	const secret = "q-9f8e7d6c5b4a3928"
	x := &Exchange{callerCtx: context.Background()}
	req := httptest.NewRequest(http.MethodPost, "http://gw.example/v1/chat/completions?api_key="+secret, nil)
	_, err := x.Middleware(req, func(r *http.Request) (*http.Response, error) {
		return nil, &url.Error{Op: "Post", URL: r.URL.String(), Err: errors.New("connection refused")}
	})
	if err == nil || x.connErr == nil {
		t.Fatal("the failure was not recorded")
	}
	if strings.Contains(x.connErr.Error(), secret) {
		t.Errorf("connection error text holds the query value: %v", x.connErr)
	}
	if !strings.Contains(x.connErr.Error(), "api_key=REDACTED") {
		t.Errorf("connection error text %q does not name the redacted parameter", x.connErr)
	}
}
