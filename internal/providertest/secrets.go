package providertest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/diag"
	"github.com/polyloop/polyloop/internal/provider"
)

// TestSecrets checks that the API key from the environment reaches the
// server and nothing else: not the error text (rejected401, whose fixture
// echoes the key, shows it redacted), the diagnostic, Describe or the
// client's formatting; and that a key in the base URL is not described. It
// sets the key's environment variable, so it must not run in parallel.
func TestSecrets[P provider.Package](t *testing.T, h Harness[P], rejected401 Response) {
	t.Run("key from the environment never leaks", func(t *testing.T) {
		keyFromEnvironmentNeverLeaks(t, h, rejected401)
	})
	t.Run("key in the base URL is not described", func(t *testing.T) {
		t.Parallel()
		c := h.must(t, Options{BaseURL: "https://user:" + SecretKey + "@gateway.example" + h.Endpoint.Base + "?k=" + SecretKey,
			APIKey: SecretKey})
		desc, _ := json.Marshal(c.Describe())
		if strings.Contains(string(desc), SecretKey) {
			t.Errorf("Describe shows the key: %s", desc)
		}
	})
}

func keyFromEnvironmentNeverLeaks[P provider.Package](t *testing.T, h Harness[P], rejected401 Response) {
	t.Setenv(h.KeyEnv, SecretKey)
	srv := h.Serve(t, rejected401)
	c := h.must(t, Options{BaseURL: srv.URL()})
	_, err := c.Complete(context.Background(), h.Request(polyloop.ModelParams{}))
	if err == nil {
		t.Fatal("a 401 gave no error")
	}
	if got := srv.Request(0).Header.Get("Authorization"); got != "Bearer "+SecretKey {
		t.Fatalf("the server got Authorization %q: the key from the environment was not used", got)
	}
	d, _ := json.Marshal(diag.From(err))
	desc, _ := json.Marshal(c.Describe())
	for what, text := range map[string]string{
		"error text":        err.Error(),
		"diagnostic":        string(d),
		"Describe":          string(desc),
		"fmt of the client": fmt.Sprintf("%v %+v %#v %s", c, c, c, c),
	} {
		if strings.Contains(text, SecretKey) {
			t.Errorf("the API key appears in the %s: %s", what, text)
		}
	}
	if !strings.Contains(err.Error(), "[REDACTED]") {
		t.Errorf("the fixture echoes the key, so the error should show it redacted: %v", err)
	}
}
