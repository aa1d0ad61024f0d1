package provider

import (
	"context"
	"errors"

	"github.com/polyloop/polyloop"
)

// ErrIncompleteStream is the cause of a *ConnectionError for a stream that
// ended, without a read error, before the reply was complete (no finish
// reason, no message_stop).
var ErrIncompleteStream = errors.New("the stream ended before the reply was complete")

// Stream makes attempts as Call does, each a streamed request whose deltas
// send delivers with Exchange.Emit: they reach deltas numbered with the
// attempt (1, 2 …), from the caller's goroutine, and never after Stream
// returned. When an attempt that delivered deltas is retried, Stream
// delivers Delta{Attempt: n, Superseded: true} before the next attempt
// begins; it does not announce the last attempt of a call that fails (the
// library does).
//
// What the failed attempts consumed belongs to the call, as Call counts it:
// the usage they reported (Exchange.Report) is added to the reply's, or
// carried by the error as a *UsageError when the call fails. An attempt
// that delivered deltas was billed even if it reported no usage, like one
// whose stream broke: the call's tokens are then a lower bound and its cost
// unknown (Usage.TokensUnknown, a nil CostUSD).
func (c *Caller[P]) Stream(ctx context.Context, mp polyloop.ModelParams, deltas func(polyloop.Delta), send Send) (polyloop.ModelReply, error) {
	if deltas == nil {
		deltas = func(polyloop.Delta) {}
	}
	return c.call(ctx, mp, deltas, send)
}

// spending is what the failed attempts of a call consumed.
type spending struct {
	usage polyloop.Usage
	cost  float64
	// consumed: some attempt reported usage or was billed; costUnknown:
	// the cost of one of them is not known; tokensUnknown: one of them was
	// billed for tokens it did not report.
	consumed, costUnknown, tokensUnknown bool
}

// add counts the attempt x, which failed; unanswered says that its request
// was sent and no complete answer came (Caller.unanswered): it was billed
// for an amount it may not have reported, or only in part.
func (s *spending) add(x *Exchange, unanswered bool) {
	if x.usage != nil {
		u := *x.usage
		s.usage.InputTokens += u.InputTokens
		s.usage.OutputTokens += u.OutputTokens
		s.usage.CachedTokens += u.CachedTokens
		s.usage.ReasoningTokens += u.ReasoningTokens
		if u.CostUSD != nil {
			s.cost += *u.CostUSD
		} else {
			s.costUnknown = true
		}
		s.consumed = true
	}
	if unanswered || (x.delivered > 0 && x.usage == nil) { // billed, amount unknown
		s.consumed, s.costUnknown, s.tokensUnknown = true, true, true
	}
}

// total is the spending as a Usage.
func (s *spending) total() polyloop.Usage {
	u := s.usage
	u.TokensUnknown = s.tokensUnknown
	if !s.costUnknown && !s.tokensUnknown {
		c := s.cost
		u.CostUSD = &c
	}
	return u
}

// onto adds the spending to the accepted attempt's usage u.
func (s *spending) onto(u polyloop.Usage) polyloop.Usage {
	if !s.consumed {
		return u
	}
	t := s.total()
	t.InputTokens += u.InputTokens
	t.OutputTokens += u.OutputTokens
	t.CachedTokens += u.CachedTokens
	t.ReasoningTokens += u.ReasoningTokens
	// u reporting no tokens at all says nothing of what it consumed.
	t.TokensUnknown = t.TokensUnknown || u.TokensUnknown || (u.InputTokens == 0 && u.OutputTokens == 0 && u.CachedTokens == 0)
	if t.CostUSD != nil && u.CostUSD != nil && !t.TokensUnknown {
		c := *t.CostUSD + *u.CostUSD
		t.CostUSD = &c
	} else {
		t.CostUSD = nil
	}
	return t
}

// carry gives err the spending, through wrap, when something was consumed.
// A failure that carries its own usage (a reply received and refused) adds
// it, so that the call's error carries all it consumed.
func (s *spending) carry(err error, wrap func(polyloop.Usage, error) error) error {
	if !s.consumed {
		return err
	}
	var uc polyloop.UsageCarrier
	if errors.As(err, &uc) {
		return wrap(s.onto(uc.CallUsage()), err)
	}
	return wrap(s.total(), err)
}

// EventError is the error an error event of a stream reports, from its data
// (an error body): an *APIError with InStream set, the status the provider
// documents for its type (Wire.EventStatus), and the response's request id
// and Retry-After.
func (c *Caller[P]) EventError(x *Exchange, data []byte) error {
	e := &APIError[P]{InStream: true, RequestID: x.RequestID(), RetryAfter: retryAfter(x.header)}
	f, ok := c.Wire.ParseError(data)
	if !ok {
		e.Message = c.clean(string(data))
		return e
	}
	c.fill(e, f)
	if c.Wire.EventStatus != nil {
		e.StatusCode = c.Wire.EventStatus(f)
	}
	return e
}

// Incomplete is the error of an attempt whose stream ended before the reply
// was complete: the connection failure the attempt saw, if any, else a
// *ConnectionError caused by ErrIncompleteStream.
func (c *Caller[P]) Incomplete(x *Exchange) error {
	if x.connErr != nil {
		return &ConnectionError[P]{Err: x.connErr}
	}
	return &ConnectionError[P]{Err: ErrIncompleteStream}
}
