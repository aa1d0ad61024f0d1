package anthropicmodel

import (
	"context"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
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
		return c.attempt(ctx, x, params)
	})
}

// attempt makes one request.
func (c *Client) attempt(ctx context.Context, x *provider.Exchange, params anthropic.MessageNewParams) (polyloop.ModelReply, error) {
	msg, err := c.sdk.Messages.New(ctx, params, c.requestOptions(x)...)
	if err != nil {
		return polyloop.ModelReply{}, c.p.Classify(x, err)
	}
	return c.reply(msg, x, string(params.Model))
}

// requestOptions are the SDK's options of an attempt.
func (c *Client) requestOptions(x *provider.Exchange) []option.RequestOption {
	opts := []option.RequestOption{option.WithMiddleware(x.Middleware)}
	if c.p.Timeout > 0 {
		// Setting the SDK's timeout too (ctx already has it) keeps it from
		// refusing a request whose max_tokens it expects to take longer than
		// its default.
		opts = append(opts, option.WithRequestTimeout(c.p.Timeout))
	}
	return opts
}
