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
	// EventStatus is the HTTP status the provider documents for the error
	// an error event of a stream reports (429 for a rate limit); 0 when it
	// documents none.
	EventStatus func(f ErrorFields) int
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
	return c.call(ctx, mp, nil, send)
}

// call is the retry loop of Call and Stream; deltas is nil for Call.
func (c *Caller[P]) call(ctx context.Context, mp polyloop.ModelParams, deltas func(polyloop.Delta), send Send) (polyloop.ModelReply, error) {
	policy := retryPolicy{
		retries:       max(mp.Retries, 0),
		base:          time.Duration(max(mp.RetryBackoffMS, 0)) * time.Millisecond,
		maxBackoff:    c.MaxBackoff,
		maxRetryAfter: c.MaxRetryAfter,
	}
	var spent spending
	for attempt := 1; ; attempt++ {
		x := c.exchange(ctx, attempt, deltas)
		reply, err := c.attempt(ctx, x, send)
		if err == nil {
			reply.Attempts = attempt
			reply.Usage = spent.onto(reply.Usage)
			return reply, nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return polyloop.ModelReply{}, fmt.Errorf("%s: call cancelled (attempt %d): %w", name[P](), attempt, cerr)
		}
		spent.add(x, c.unanswered(x, err))
		var n counted
		if errors.As(err, &n) {
			n.setAttempts(attempt)
		}
		wait, retry := policy.delay(err, attempt)
		if !retry {
			return polyloop.ModelReply{}, spent.carry(err, func(u polyloop.Usage, err error) error { return &UsageError[P]{Usage: u, Err: err} })
		}
		x.supersede()
		if serr := sleep(ctx, wait); serr != nil {
			return polyloop.ModelReply{}, fmt.Errorf("%s: call cancelled waiting to retry after %d attempts: %w", name[P](), attempt, serr)
		}
	}
}

// unanswered reports whether the failed attempt x may have been billed for
// more than it reported: its request was sent (Exchange.sent) and it failed
// for want of a complete answer — it timed out, lost its connection, or had
// its body or stream cut short (a *ConnectionError) — not with an error
// status. A provider does not bill an error status or a request it never
// received (a refused connection); a request it received may be running
// or done, and billed, when the client stops waiting.
func (c *Caller[P]) unanswered(x *Exchange, err error) bool {
	var ce *ConnectionError[P]
	return errors.As(err, &ce) && x.status < 400 && x.sent()
}

// exchange is the Exchange of one attempt.
func (c *Caller[P]) exchange(ctx context.Context, attempt int, deltas func(polyloop.Delta)) *Exchange {
	return &Exchange{callerCtx: ctx, timeoutErr: c.Wire.ErrAttemptTimeout, requestIDHeader: c.Wire.RequestIDHeader,
		attempt: attempt, deltas: deltas}
}

// attempt makes one request, bounded by the attempt timeout. A reply beyond
// the log's limits (CheckReply) is a *ResponseError carrying the reply's
// usage.
func (c *Caller[P]) attempt(ctx context.Context, x *Exchange, send Send) (polyloop.ModelReply, error) {
	actx := ctx
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
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
