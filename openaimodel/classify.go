package openaimodel

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

// errorBody covers the error bodies of OpenAI ({"error": {...}}), of servers
// that put the fields at the top level (vLLM) and of those whose "error" is
// a string (some Ollama versions).
type errorBody struct {
	Error   json.RawMessage `json:"error"`
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Param   json.RawMessage `json:"param"`
	Code    json.RawMessage `json:"code"`
}

type errorFields struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Param   json.RawMessage `json:"param"`
	Code    json.RawMessage `json:"code"`
}

func (c *Client) apiError(x *exchange) *APIError {
	e := &APIError{StatusCode: x.status, RequestID: x.requestID(), RetryAfter: retryAfter(x.header)}
	var b errorBody
	if err := json.Unmarshal(x.body, &b); err != nil {
		e.Message = c.clean(string(bytes.TrimSpace(x.body)))
		return e
	}
	f := errorFields{Message: b.Message, Type: b.Type, Param: b.Param, Code: b.Code}
	if len(b.Error) > 0 {
		var s string
		if json.Unmarshal(b.Error, &s) == nil {
			f.Message = s
		} else {
			_ = json.Unmarshal(b.Error, &f) // a shape we do not know leaves the fields empty
		}
	}
	e.Message = c.clean(f.Message)
	e.Type = c.clean(f.Type)
	e.Param = c.clean(scalar(f.Param))
	e.Code = c.clean(scalar(f.Code))
	return e
}

// scalar renders a JSON string without quotes and any other scalar as its
// text; null and absent give "".
func scalar(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	t := string(bytes.TrimSpace(raw))
	if t == "null" || strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
		return ""
	}
	return t
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

// minRedactLen is the shortest key that is redacted: a shorter one ("x")
// would erase ordinary letters from messages, and protects nothing.
const minRedactLen = 4

func redact(s, key string) string {
	if len(key) < minRedactLen {
		return s
	}
	return strings.ReplaceAll(s, key, "[REDACTED]")
}
