package openaimodel

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/polyloop/polyloop/internal/provider"
)

// wire is what the shared call machinery needs to know of the API.
var wire = provider.Wire{
	RequestIDHeader:   "x-request-id",
	ParseError:        parseError,
	ErrAttemptTimeout: ErrAttemptTimeout,
	ErrBadRequest:     ErrBadRequest,
	EventStatus:       eventStatus,
}

// eventStatus is the HTTP status OpenAI answers with for the error an error
// event of a stream reports: 429 for rate limits and exhausted quotas, 500
// for a server error, 400 for an invalid request; 0 for others.
func eventStatus(f provider.ErrorFields) int {
	switch {
	case f.Code == "rate_limit_exceeded" || f.Code == "insufficient_quota" || f.Type == "requests" || f.Type == "tokens":
		return 429
	case f.Type == "server_error":
		return 500
	case f.Type == "invalid_request_error":
		return 400
	}
	return 0
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

// parseError reads an error body; ok is false for one that is not JSON.
func parseError(body []byte) (provider.ErrorFields, bool) {
	var b errorBody
	if err := json.Unmarshal(body, &b); err != nil {
		return provider.ErrorFields{}, false
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
	return provider.ErrorFields{Type: f.Type, Code: scalar(f.Code), Param: scalar(f.Param), Message: f.Message}, true
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
