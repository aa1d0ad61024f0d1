package anthropicmodel

import (
	"context"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/polyloop/polyloop"
)

var userOnly = []polyloop.Message{{Role: polyloop.RoleUser, Content: "Hi"}}

func call(t *testing.T, c *Client, retries int) (polyloop.ModelReply, error) {
	t.Helper()
	return c.Complete(context.Background(), polyloop.ModelRequest{Messages: userOnly,
		Params: polyloop.ModelParams{Model: "claude-sonnet-5-5", Retries: retries, RetryBackoffMS: 1}})
}

func newTestClient(t *testing.T, baseURL string) *Client {
	t.Helper()
	c, err := New(Options{BaseURL: baseURL, APIKey: "test-key"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func anthropicUsage(input, cacheRead, cacheWrite, output int64) anthropic.Usage {
	return anthropic.Usage{InputTokens: input, CacheReadInputTokens: cacheRead,
		CacheCreationInputTokens: cacheWrite, OutputTokens: output}
}
