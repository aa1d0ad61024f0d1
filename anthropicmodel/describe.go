package anthropicmodel

import (
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/provider"
)

// config is what Describe puts in the snapshot: everything about the client
// that changes what the model sees or how calls are made. Never the key.
type config struct {
	Provider             string               `json:"provider"`
	BaseURL              string               `json:"base_url"`
	DefaultModel         string               `json:"default_model,omitempty"`
	DefaultMaxTokens     int                  `json:"default_max_tokens"`
	UnansweredToolResult string               `json:"unanswered_tool_result"`
	EmptyObservation     string               `json:"empty_observation"`
	UnsupportedParams    string               `json:"unsupported_params"`
	PriceTable           string               `json:"price_table"`
	AttemptTimeoutMS     int64                `json:"attempt_timeout_ms,omitempty"`
	Retry                provider.RetryConfig `json:"retry"`
}

// Describe identifies the client in the run's snapshot: provider, base URL,
// price table version, request shaping (including the parameters the API
// has no field for, which are not sent) and retry policy. It never includes
// the API key.
func (c *Client) Describe() polyloop.Component {
	return provider.Component("anthropicmodel", config{
		Provider:             "anthropic",
		BaseURL:              c.p.SafeBaseURL(),
		DefaultModel:         c.p.Model,
		DefaultMaxTokens:     c.maxTokens,
		UnansweredToolResult: c.p.UnansweredToolResult,
		EmptyObservation:     c.emptyObservation,
		UnsupportedParams:    c.unsupportedPolicy(),
		PriceTable:           c.p.PriceTable(),
		AttemptTimeoutMS:     c.p.AttemptTimeoutMS(),
		Retry:                c.p.RetryConfig(),
	})
}

// unsupportedPolicy says what happens to temperature, top_p and seed.
func (c *Client) unsupportedPolicy() string {
	if c.dropUnsupported {
		return "temperature, top_p and seed are not sent"
	}
	return "temperature, top_p and seed fail the call"
}
