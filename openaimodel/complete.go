package openaimodel

import (
	"context"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/provider"
)

// Complete sends the request, retrying as ModelParams.Retries and
// RetryBackoffMS say (see the package doc). It implements
// polyloop.ModelClient.
func (c *Client) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	params, err := c.params(req)
	if err != nil {
		return polyloop.ModelReply{}, err
	}
	return c.p.Call(ctx, req.Params, func(ctx context.Context, x *provider.Exchange) (polyloop.ModelReply, error) {
		return c.attempt(ctx, x, params, req.CallID)
	})
}

// attempt makes one request.
func (c *Client) attempt(ctx context.Context, x *provider.Exchange, params openai.ChatCompletionNewParams, callID string) (polyloop.ModelReply, error) {
	resp, err := c.sdk.Chat.Completions.New(ctx, params, option.WithMiddleware(x.Middleware))
	if err != nil {
		return polyloop.ModelReply{}, c.p.Classify(x, err)
	}
	return c.reply(resp, x, string(params.Model), callID)
}
