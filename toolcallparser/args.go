package toolcallparser

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/feedback"
)

// errNotUTF8 is the cause for arguments that are not valid UTF-8.
var errNotUTF8 = errors.New("arguments are not valid UTF-8")

// notObjectError says that arguments are valid JSON but not an object, and
// which kind of value they are.
type notObjectError struct{ kind string }

func (e *notObjectError) Error() string { return "arguments are a JSON " + e.kind + ", not an object" }

// objectArgs checks that raw is one JSON object (empty and null mean {}) and
// returns a compacted copy. A JSON string is taken as the text of the
// arguments, once.
func objectArgs(raw json.RawMessage) (json.RawMessage, error) {
	v, err := compactValue(raw)
	if err != nil {
		return nil, err
	}
	if feedback.JSONKind(v) == "string" {
		var text string // declared here: it escapes (Unmarshal), only for a string
		if json.Unmarshal(v, &text) == nil {
			if v, err = compactValue([]byte(text)); err != nil {
				return nil, err
			}
		}
	}
	if k := feedback.JSONKind(v); k != "object" {
		return nil, &notObjectError{kind: k}
	}
	return v, nil
}

// compactValue checks that raw is one JSON value and returns a compacted
// copy; empty and null give {}.
func compactValue(raw []byte) (json.RawMessage, error) {
	if trimmed := bytes.TrimSpace(raw); len(trimmed) == 0 || string(trimmed) == "null" {
		return json.RawMessage("{}"), nil // null arguments: none
	}
	if !utf8.Valid(raw) {
		return nil, errNotUTF8
	}
	// Compact checks that raw is exactly one value (the scanner Unmarshal
	// uses) as it copies it without whitespace, in one pass and one
	// allocation. When it refuses raw, Unmarshal says why, with the offset
	// of the syntax error in raw, as it always did.
	buf := bytes.NewBuffer(make([]byte, 0, len(raw)))
	if err := json.Compact(buf, raw); err != nil {
		var v json.RawMessage
		if uerr := json.Unmarshal(raw, &v); uerr != nil {
			return nil, uerr
		}
		return nil, err
	}
	if err := polyloop.CheckJSONLimits(buf.Bytes()); err != nil {
		return nil, err // a string's text may hold what the log cannot
	}
	return buf.Bytes(), nil
}

// syntaxOffset returns the byte offset of a JSON syntax error, or -1.
func syntaxOffset(err error) int64 {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return se.Offset
	}
	return -1
}
