package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/polyloop/polyloop"
)

// errNotObject is the cause of a tool schema that is not a JSON object.
var errNotObject = errors.New("not a JSON object")

// ToolSchema is the parameter schema sent for a tool: the snapshot's bytes,
// or an object without properties when it has none. A schema that is not a
// JSON object is an error (for the client to wrap in its ErrBadRequest).
func ToolSchema(t polyloop.ToolSpec) (json.RawMessage, error) {
	if len(t.Parameters) == 0 {
		return json.RawMessage(`{"type":"object","properties":{}}`), nil
	}
	if !IsObject(t.Parameters) {
		return nil, fmt.Errorf("the parameters of tool %q are %w", t.Name, errNotObject)
	}
	return t.Parameters, nil
}

// IsObject reports whether raw is a JSON object.
func IsObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{"))
}
