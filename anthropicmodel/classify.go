package anthropicmodel

import (
	"encoding/json"

	"github.com/polyloop/polyloop/internal/provider"
)

// wire is what the shared call machinery needs to know of the API.
var wire = provider.Wire{
	RequestIDHeader:   "request-id",
	ParseError:        parseError,
	ErrAttemptTimeout: ErrAttemptTimeout,
	ErrBadRequest:     ErrBadRequest,
	EventStatus:       eventStatus,
}

// eventStatuses are the HTTP statuses the Messages API documents for its
// error types, which an error event of a stream names.
var eventStatuses = map[string]int{
	"invalid_request_error": 400,
	"authentication_error":  401,
	"billing_error":         402,
	"permission_error":      403,
	"not_found_error":       404,
	"request_too_large":     413,
	"rate_limit_error":      429,
	"api_error":             500,
	"timeout_error":         504,
	"overloaded_error":      529,
}

// eventStatus is the status documented for an error event's type; 0 for a
// type the API does not document.
func eventStatus(f provider.ErrorFields) int { return eventStatuses[f.Type] }

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

// parseError reads an error body; ok is false for one that is not JSON. An
// error code that is not a string is left out.
func parseError(body []byte) (provider.ErrorFields, bool) {
	var b errorBody
	if err := json.Unmarshal(body, &b); err != nil {
		return provider.ErrorFields{}, false
	}
	f := provider.ErrorFields{Type: b.Error.Type, Message: b.Error.Message, RequestID: b.RequestID}
	var code string
	if json.Unmarshal(b.Error.Details.ErrorCode, &code) == nil {
		f.Code = code
	}
	return f, true
}
