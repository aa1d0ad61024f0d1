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
