package funcexec

import (
	"encoding/json"
	"fmt"
)

// validArgs checks raw arguments against the tool's schema. It returns the
// arguments to decode (an absent argument object counts as {}) or, when they
// are refused, why.
func validArgs(t *tool, raw json.RawMessage) (json.RawMessage, string) {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	var instance any
	if err := json.Unmarshal(raw, &instance); err != nil {
		return nil, fmt.Sprintf("arguments are not valid JSON: %v", err)
	}
	if err := t.resolved.Validate(instance); err != nil {
		return nil, fmt.Sprintf("arguments do not match the tool's schema: %v", err)
	}
	return raw, ""
}
