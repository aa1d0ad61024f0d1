package provider

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxMessageBytes bounds the provider message kept in an APIError.
const maxMessageBytes = 1024

// ErrorFields are the fields a client's ParseError reads from an error body,
// as the server wrote them: Caller redacts and bounds them.
type ErrorFields struct {
	Type, Code, Param, Message string
	// RequestID is the body's request id, used when no header gave one.
	RequestID string
}

// Classify turns a failed attempt into the error types of package P, from
// what the attempt saw on the wire. sdkErr is the SDK's error, used only as
// the cause of a response that could not be decoded, or of a request the SDK
// refused to send (wrapped with Wire.ErrBadRequest).
func (c *Caller[P]) Classify(x *Exchange, sdkErr error) error {
	var re *RedirectError
	switch {
	case errors.As(x.connErr, &re): // answered, with a redirect: not a connection failure
		return &APIError[P]{StatusCode: re.StatusCode, Message: re.Error()}
	case x.connErr != nil:
		return &ConnectionError[P]{Err: x.connErr}
	case x.bodyErr != nil:
		return &ResponseError[P]{StatusCode: x.status, RequestID: x.RequestID(), Err: x.bodyErr}
	case x.status >= 400:
		return c.apiError(x)
	case x.status != 0:
		return &ResponseError[P]{StatusCode: x.status, RequestID: x.RequestID(), Err: sdkErr}
	default: // nothing was sent: the SDK refused the request
		return fmt.Errorf("%w: %w", c.Wire.ErrBadRequest, sdkErr)
	}
}

func (c *Caller[P]) apiError(x *Exchange) *APIError[P] {
	e := &APIError[P]{StatusCode: x.status, RequestID: x.RequestID(), RetryAfter: retryAfter(x.header)}
	f, ok := c.Wire.ParseError(x.body)
	if !ok {
		e.Message = c.clean(string(bytes.TrimSpace(x.body)))
		return e
	}
	c.fill(e, f)
	return e
}

// fill sets the fields of e that an error body gives, cleaned.
func (c *Caller[P]) fill(e *APIError[P], f ErrorFields) {
	e.Type = c.clean(f.Type)
	e.Code = c.clean(f.Code)
	e.Param = c.clean(f.Param)
	e.Message = c.clean(f.Message)
	if e.RequestID == "" {
		e.RequestID = c.clean(f.RequestID)
	}
}

// clean redacts every occurrence of the API key from text that came from the
// server (a provider may echo what it was sent) and bounds it.
func (c *Caller[P]) clean(s string) string {
	s = redact(s, c.Key)
	if len(s) > maxMessageBytes {
		cut := maxMessageBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// minRedactLen is the shortest key that is redacted: a shorter one ("x")
// would erase ordinary letters from messages, and protects nothing.
const minRedactLen = 4

func redact(s, key string) string {
	if len(key) < minRedactLen {
		return s
	}
	return strings.ReplaceAll(s, key, "[REDACTED]")
}
