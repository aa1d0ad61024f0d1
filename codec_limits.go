package polyloop

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"
)

// The limits of the log (docs/log-format.md, "Limits"). No record beyond
// them is appended (the Runner checks every record before its Append,
// whatever the store; AppendRecords likewise), so every record a store
// accepts reads back: encoding/json decodes at most 10000 levels of
// nesting, far above MaxRecordDepth. Outside data is checked where
// it enters — the model clients check replies, the library bounds every
// executor's observation, the runner checks the tools' parameter schemas
// (ErrInvalidConfig, before anything is written) — so that a failure there
// is a failure of that call or configuration, not of the store.
const (
	// MaxJSONDepth is the deepest nesting of arrays and objects a JSON
	// value from outside the library may have: the arguments of a tool call
	// in a model's reply or in a parsed action, a child run's value, a
	// tool's parameter schema. A value at this depth counts its own
	// outermost array or object as level 1.
	MaxJSONDepth = 1000
	// MaxRecordDepth is the deepest nesting a stored record may have:
	// MaxJSONDepth plus room for the levels a record puts around the
	// values it holds (a tool call's arguments sit four levels down in a
	// model_call_result).
	MaxRecordDepth = MaxJSONDepth + 24
	// MaxRecordBytes is the size of the largest encoded record: 64 MiB.
	MaxRecordBytes = 64 << 20
	// MaxObservationBytes bounds an executed action's observation as the
	// log keeps it: 8 MiB. The library cuts a longer one, whatever the
	// executor, at a character boundary with a note, and counts the
	// characters dropped in the step's TruncatedChars. Escaped as JSON (at
	// most six bytes for one), such an observation fits in a record of
	// MaxRecordBytes.
	MaxObservationBytes = 8 << 20
)

// ErrJSONLimit marks JSON that the log does not hold: nested deeper than
// its limit, larger than MaxRecordBytes, or with invalid UTF-8. Errors that
// carry it are *JSONLimitError values.
var ErrJSONLimit = errors.New("polyloop: JSON beyond the log's limits")

// JSONLimit names the limit a JSON text broke.
type JSONLimit string

// The limits CheckJSONLimits and CheckRecordLimits check.
const (
	LimitDepth JSONLimit = "depth"
	LimitSize  JSONLimit = "size"
	LimitUTF8  JSONLimit = "utf8"
)

// JSONLimitError says which limit a JSON text broke and where.
type JSONLimitError struct {
	Limit JSONLimit
	// Offset is the byte offset where the text broke the limit: the
	// bracket one level too deep, the first byte past the size limit, the
	// first byte that is not UTF-8.
	Offset int
	// Max is the limit (levels or bytes); 0 for LimitUTF8.
	Max int
}

func (e *JSONLimitError) Error() string {
	switch e.Limit {
	case LimitDepth:
		return fmt.Sprintf("polyloop: JSON nests deeper than %d levels (at byte %d)", e.Max, e.Offset)
	case LimitSize:
		return fmt.Sprintf("polyloop: JSON is larger than %d bytes", e.Max)
	}
	return fmt.Sprintf("polyloop: JSON holds invalid UTF-8 at byte %d", e.Offset)
}

// Is makes errors.Is(err, ErrJSONLimit) true.
func (e *JSONLimitError) Is(target error) bool { return target == ErrJSONLimit }

// CheckJSONLimits checks a JSON value from outside the library against the
// log's limits: at most MaxJSONDepth levels of nesting, at most
// MaxRecordBytes, valid UTF-8. It returns a *JSONLimitError (errors.Is
// ErrJSONLimit) or nil. It does not check the syntax (json.Valid does); it
// reads the text once and allocates nothing.
func CheckJSONLimits(b []byte) error { return checkJSON(b, MaxJSONDepth) }

// CheckRecordLimits is CheckJSONLimits for an encoded record, whose depth
// may reach MaxRecordDepth.
func CheckRecordLimits(b []byte) error { return checkJSON(b, MaxRecordDepth) }

func checkJSON(b []byte, maxDepth int) error {
	if len(b) > MaxRecordBytes {
		return &JSONLimitError{Limit: LimitSize, Offset: MaxRecordBytes, Max: MaxRecordBytes}
	}
	if at := depthExceeded(b, maxDepth); at >= 0 {
		return &JSONLimitError{Limit: LimitDepth, Offset: at, Max: maxDepth}
	}
	if !utf8.Valid(b) {
		return &JSONLimitError{Limit: LimitUTF8, Offset: invalidUTF8At(b)}
	}
	return nil
}

// depthExceeded returns the offset of the first bracket that opens level
// maxDepth+1, or -1. Brackets inside strings do not count. A text with no
// more opening brackets than maxDepth, anywhere, cannot nest deeper: most
// records are decided by two vectorised counts, without a scan.
func depthExceeded(b []byte, maxDepth int) int {
	if bytes.Count(b, []byte{'['})+bytes.Count(b, []byte{'{'}) <= maxDepth {
		return -1
	}
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = stringEnd(b, i+1)
		case '[', '{':
			depth++
			if depth > maxDepth {
				return i
			}
		case ']', '}':
			depth--
		}
	}
	return -1
}

// stringEnd returns the offset of the quote that closes the string whose
// contents start at i (len(b) for a string left open).
func stringEnd(b []byte, i int) int {
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b)
		}
		q := i + j
		k := q - 1
		for k >= i && b[k] == '\\' {
			k--
		}
		if (q-1-k)%2 == 0 { // an even run of backslashes escapes itself
			return q
		}
		i = q + 1
	}
}

// invalidUTF8At returns the offset of the first byte of b that is not part
// of a UTF-8 sequence, or len(b) when b is valid UTF-8.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// ValidText returns s as a record keeps it: encoding/json replaces each
// byte of a string that is not part of a UTF-8 sequence with U+FFFD, so an
// executor that returns its observation through ValidText shows the model,
// live, the very text a resumed run reads back from the log. A valid s is
// returned as is.
func ValidText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b []byte
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, "\uFFFD"...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return string(b)
}
