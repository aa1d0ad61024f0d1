package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/polyloop/polyloop"
)

// Wire is what Caller needs to know of a provider's API.
type Wire struct {
	// RequestIDHeader names the response header with the request's id.
	RequestIDHeader string
	// ParseError reads an error body; ok is false for a body that is not
	// JSON, whose text then becomes the message.
	ParseError func(body []byte) (f ErrorFields, ok bool)
	// ErrAttemptTimeout is the cause of a *ConnectionError when one attempt
	// outlived Settings.Timeout.
	ErrAttemptTimeout error
	// ErrBadRequest wraps the SDK's error for a request it refused to send.
	ErrBadRequest error
}

// Caller makes a client's calls: the retry loop, one timeout per attempt,
// the capture of what each attempt saw on the wire and the classification
// of failures into the error types of package P. It is safe for concurrent
// use once configured.
type Caller[P Package] struct {
	Settings
	Wire Wire
}

// Send makes one attempt with ctx, passing x.Middleware to the SDK. A
// failure of the SDK call is returned as Caller.Classify gives it; a reply
// that cannot be converted as a *ResponseError.
type Send func(ctx context.Context, x *Exchange) (polyloop.ModelReply, error)

// Call makes attempts with send until one succeeds, the policy (from
// ModelParams.Retries and RetryBackoffMS) retries no more, or ctx is done:
// then the error satisfies errors.Is(err, ctx.Err()).
func (c *Caller[P]) Call(ctx context.Context, mp polyloop.ModelParams, send Send) (polyloop.ModelReply, error) {
	policy := retryPolicy{
		retries:       max(mp.Retries, 0),
		base:          time.Duration(max(mp.RetryBackoffMS, 0)) * time.Millisecond,
		maxBackoff:    c.MaxBackoff,
		maxRetryAfter: c.MaxRetryAfter,
	}
	for attempt := 1; ; attempt++ {
		reply, err := c.attempt(ctx, send)
		if err == nil {
			reply.Attempts = attempt
			return reply, nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return polyloop.ModelReply{}, fmt.Errorf("%s: call cancelled (attempt %d): %w", name[P](), attempt, cerr)
		}
		var n counted
		if errors.As(err, &n) {
			n.setAttempts(attempt)
		}
		wait, retry := policy.delay(err, attempt)
		if !retry {
			return polyloop.ModelReply{}, err
		}
		if serr := sleep(ctx, wait); serr != nil {
			return polyloop.ModelReply{}, fmt.Errorf("%s: call cancelled waiting to retry after %d attempts: %w", name[P](), attempt, serr)
		}
	}
}

// attempt makes one request, bounded by the attempt timeout. A reply beyond
// the log's limits (CheckReply) is a *ResponseError carrying the reply's
// usage.
func (c *Caller[P]) attempt(ctx context.Context, send Send) (polyloop.ModelReply, error) {
	actx := ctx
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	x := &Exchange{callerCtx: ctx, timeoutErr: c.Wire.ErrAttemptTimeout, requestIDHeader: c.Wire.RequestIDHeader}
	reply, err := send(actx, x)
	if err != nil {
		return reply, err
	}
	if err := CheckReply(reply); err != nil {
		u := reply.Usage
		return polyloop.ModelReply{}, &ResponseError[P]{StatusCode: x.Status(), RequestID: x.RequestID(), Usage: &u, Err: err}
	}
	return reply, nil
}
