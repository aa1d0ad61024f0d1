package anthropicmodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxMessageBytes bounds the provider message kept in an APIError.
const maxMessageBytes = 1024

// classify turns a failed attempt into the package's error types, from what
// the attempt saw on the wire. sdkErr is the SDK's error, used only as the
// cause of a response that could not be decoded.
func (c *Client) classify(x *exchange, sdkErr error) error {
	switch {
	case x.connErr != nil:
		return &ConnectionError{Err: x.connErr}
	case x.bodyErr != nil:
		return &ResponseError{StatusCode: x.status, RequestID: x.requestID(), Err: x.bodyErr}
	case x.status >= 400:
		return c.apiError(x)
	case x.status != 0:
		return &ResponseError{StatusCode: x.status, RequestID: x.requestID(), Err: sdkErr}
	default: // nothing was sent: the SDK refused the request
		return fmt.Errorf("%w: %w", ErrBadRequest, sdkErr)
	}
}

// errorBody is the Messages API's error shape:
// {"type": "error", "error": {"type", "message", "details": {"error_code"}}, "request_id"}.
type errorBody struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Details struct {
			ErrorCode json.RawMessage `json:"error_code"`
		} `json:"details"`
	} `json:"error"`
	RequestID string `json:"request_id"`
}

func (c *Client) apiError(x *exchange) *APIError {
	e := &APIError{StatusCode: x.status, RequestID: x.requestID(), RetryAfter: retryAfter(x.header)}
	var b errorBody
	if err := json.Unmarshal(x.body, &b); err != nil {
		e.Message = c.clean(string(bytes.TrimSpace(x.body)))
		return e
	}
	e.Type = c.clean(b.Error.Type)
	e.Message = c.clean(b.Error.Message)
	var code string
	if json.Unmarshal(b.Error.Details.ErrorCode, &code) == nil {
		e.Code = c.clean(code)
	}
	if e.RequestID == "" {
		e.RequestID = c.clean(b.RequestID)
	}
	return e
}

// clean redacts every occurrence of the API key from text that came from the
// server (a provider may echo what it was sent) and bounds it.
func (c *Client) clean(s string) string {
	s = redact(s, c.key)
	if len(s) > maxMessageBytes {
		cut := maxMessageBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// minRedactLen is the shortest key that is redacted: a shorter one would
// erase ordinary letters from messages, and protects nothing.
const minRedactLen = 4

func redact(s, key string) string {
	if len(key) < minRedactLen {
		return s
	}
	return strings.ReplaceAll(s, key, "[REDACTED]")
}
