package openaimodel

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
	MaxTokensField       string               `json:"max_tokens_field"`
	UnansweredToolResult string               `json:"unanswered_tool_result"`
	PriceTable           string               `json:"price_table"`
	AttemptTimeoutMS     int64                `json:"attempt_timeout_ms,omitempty"`
	Retry                provider.RetryConfig `json:"retry"`
}

// Describe identifies the client in the run's snapshot: provider, base URL,
// price table version, request shaping and retry policy. It never includes
// the API key.
func (c *Client) Describe() polyloop.Component {
	return provider.Component("openaimodel", config{
		Provider:             "openai",
		BaseURL:              c.p.SafeBaseURL(),
		DefaultModel:         c.p.Model,
		MaxTokensField:       c.maxTokensField,
		UnansweredToolResult: c.p.UnansweredToolResult,
		PriceTable:           c.p.PriceTable(),
		AttemptTimeoutMS:     c.p.AttemptTimeoutMS(),
		Retry:                c.p.RetryConfig(),
	})
}
