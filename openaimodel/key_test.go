package openaimodel_test

import (
	"errors"
	"testing"

	"github.com/polyloop/polyloop/openaimodel"
)

// TestNewRefusesOpenAIWithoutAKey: a client for OpenAI's own API without a
// key would send every call to be refused; one for another server may go
// without (local servers often need none).
func TestNewRefusesOpenAIWithoutAKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	for _, base := range []string{"", openaimodel.DefaultBaseURL, "https://API.openai.com/v1"} {
		if _, err := openaimodel.New(openaimodel.Options{BaseURL: base, Model: "m"}); !errors.Is(err, openaimodel.ErrNoAPIKey) {
			t.Errorf("base URL %q without a key: New = %v, want ErrNoAPIKey", base, err)
		}
	}
	if _, err := openaimodel.New(openaimodel.Options{BaseURL: "http://127.0.0.1:11434/v1/", Model: "m"}); err != nil {
		t.Errorf("a local server without a key: %v", err)
	}
	if _, err := openaimodel.New(openaimodel.Options{APIKey: "k", Model: "m"}); err != nil {
		t.Errorf("OpenAI with Options.APIKey: %v", err)
	}
	t.Setenv("OPENAI_API_KEY", "from-env")
	if _, err := openaimodel.New(openaimodel.Options{Model: "m"}); err != nil {
		t.Errorf("OpenAI with OPENAI_API_KEY: %v", err)
	}
}
