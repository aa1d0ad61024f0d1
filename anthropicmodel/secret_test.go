package anthropicmodel

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/diag"
)

// The key is a made-up value: the test proves it reaches the server and goes
// nowhere else.
const secretKey = "sk-test-5e5e5e5e5e5e5e5e-not-a-real-key"

func TestKeyFromEnvironmentNeverLeaks(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", secretKey)
	srv := newFakeServer(t, response{status: 401, fixture: "error_401.json"})
	c, err := New(Options{BaseURL: srv.url()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(context.Background(), polyloop.ModelRequest{Messages: userOnly,
		Params: polyloop.ModelParams{Model: "claude-sonnet-5-5"}})
	if err == nil {
		t.Fatal("a 401 gave no error")
	}
	if got := srv.request(0).header.Get("Authorization"); got != "Bearer "+secretKey {
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
		if strings.Contains(text, secretKey) {
			t.Errorf("the API key appears in the %s: %s", what, text)
		}
	}
	if !strings.Contains(err.Error(), "[REDACTED]") {
		t.Errorf("the fixture echoes the key, so the error should show it redacted: %v", err)
	}
}

func TestKeyInBaseURLIsNotDescribed(t *testing.T) {
	t.Parallel()
	c, err := New(Options{BaseURL: "https://user:" + secretKey + "@gateway.example/?k=" + secretKey, APIKey: secretKey})
	if err != nil {
		t.Fatal(err)
	}
	desc, _ := json.Marshal(c.Describe())
	if strings.Contains(string(desc), secretKey) {
		t.Errorf("Describe shows the key: %s", desc)
	}
}
