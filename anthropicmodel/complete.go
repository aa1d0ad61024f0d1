package anthropicmodel

import (
	"context"
	"fmt"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/polyloop/polyloop"
)

// Complete sends the request, retrying as ModelParams.Retries and
// RetryBackoffMS say (see the package doc). It implements
// polyloop.ModelClient.
func (c *Client) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	params, err := c.params(req)
	if err != nil {
		return polyloop.ModelReply{}, err
	}
	policy := retryPolicy{
		retries:       max(req.Params.Retries, 0),
		base:          time.Duration(max(req.Params.RetryBackoffMS, 0)) * time.Millisecond,
		maxBackoff:    c.maxBackoff,
		maxRetryAfter: c.maxRetryAfter,
	}
	for attempt := 1; ; attempt++ {
		reply, err := c.attempt(ctx, params)
		if err == nil {
			reply.Attempts = attempt
			return reply, nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return polyloop.ModelReply{}, fmt.Errorf("anthropicmodel: call cancelled (attempt %d): %w", attempt, cerr)
		}
		setAttempts(err, attempt)
		wait, retry := policy.delay(err, attempt)
		if !retry {
			return polyloop.ModelReply{}, err
		}
		if serr := sleep(ctx, wait); serr != nil {
			return polyloop.ModelReply{}, fmt.Errorf("anthropicmodel: call cancelled waiting to retry after %d attempts: %w", attempt, serr)
		}
	}
}

// attempt makes one request.
func (c *Client) attempt(ctx context.Context, params anthropic.MessageNewParams) (polyloop.ModelReply, error) {
	var x exchange
	opts := []option.RequestOption{option.WithMiddleware(x.middleware(ctx))}
	actx := ctx
	if c.timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
		// Setting the SDK's timeout too keeps it from refusing a request
		// whose max_tokens it expects to take longer than its default.
		opts = append(opts, option.WithRequestTimeout(c.timeout))
	}
	msg, err := c.sdk.Messages.New(actx, params, opts...)
	if err != nil {
		return polyloop.ModelReply{}, c.classify(&x, err)
	}
	return c.reply(msg, &x, string(params.Model))
}
