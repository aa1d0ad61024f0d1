package anthropicmodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/polyloop/polyloop/internal/providertest"
)

func TestDescribe(t *testing.T) {
	t.Parallel()
	c, err := New(Options{Model: "claude-sonnet-5-5", APIKey: "k", MaxTokens: 2048, MaxBackoff: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	a, b := c.Describe(), c.Describe()
	if a.Name != "anthropicmodel" || !bytes.Equal(a.Config, b.Config) {
		t.Fatalf("Describe is not stable: %s vs %s", a.Config, b.Config)
	}
	var cfg config
	if err := json.Unmarshal(a.Config, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Provider != "anthropic" || cfg.BaseURL != DefaultBaseURL || cfg.DefaultModel != "claude-sonnet-5-5" ||
		cfg.DefaultMaxTokens != 2048 || cfg.PriceTable != PriceTableVersion ||
		cfg.UnansweredToolResult != DefaultUnansweredToolResult || cfg.EmptyObservation != DefaultEmptyObservation ||
		cfg.Retry.MaxBackoffMS != 5000 ||
		cfg.UnsupportedParams != "temperature, top_p and seed fail the call" ||
		cfg.AttemptTimeoutMS != DefaultTimeout.Milliseconds() {
		t.Errorf("Describe config = %s", a.Config)
	}
	d, err := New(Options{APIKey: "k", DropUnsupportedParams: true})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(d.Describe().Config, a.Config) {
		t.Error("dropping unsupported parameters does not show in Describe")
	}
	e, err := New(Options{APIKey: "k", EmptyObservation: "[no output]"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(e.Describe().Config, []byte(`"empty_observation":"[no output]"`)) {
		t.Errorf("Describe does not report EmptyObservation: %s", e.Describe().Config)
	}
}

func TestShippedPriceTableVersion(t *testing.T) {
	t.Parallel()
	providertest.CheckShippedPrices(t, DefaultPrices, PriceTableVersion)
}

func TestNewRejects(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	if _, err := New(Options{}); !errors.Is(err, ErrNoAPIKey) {
		t.Errorf("New without a key: err = %v, want ErrNoAPIKey", err)
	}
	for name, opts := range map[string]Options{
		"negative max tokens":         {APIKey: "k", MaxTokens: -1},
		"price table without version": {APIKey: "k", Prices: &PriceTable{Models: map[string]Price{}}},
		"blank empty observation":     {APIKey: "k", EmptyObservation: " \n"},
	} {
		if _, err := New(opts); err == nil {
			t.Errorf("%s: New accepted %+v", name, opts)
		}
	}
}
