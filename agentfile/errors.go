package agentfile

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrInvalid marks every problem found in an agent file. The errors
	// returned are *Error values, or an ErrorList of them.
	ErrInvalid = errors.New("agentfile: invalid agent file")
	// ErrSecret marks an agent file that holds what looks like a secret (an
	// API key, a token). Secrets are read from the environment only.
	ErrSecret = errors.New("agentfile: secret in agent file")
	// ErrLimit marks an agent file over one of the limits (MaxFileSize,
	// MaxDepth, MaxAliases, MaxAliasExpansion).
	ErrLimit = errors.New("agentfile: agent file over a limit")
)

// Error is one problem in an agent file, at a position.
type Error struct {
	File string
	// Line and Column are 1-based; 0 when the problem has no position (the
	// file could not be read).
	Line, Column int
	// Field is the YAML path of the offending value ("model.provider"), or
	// empty for a syntax error.
	Field string
	// Msg says what is wrong and what was expected.
	Msg string
	// Err is a sentinel the error also matches (ErrSecret, ErrLimit), or
	// nil.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Column)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// Unwrap returns the sentinel the error carries, if any.
func (e *Error) Unwrap() error { return e.Err }

// ErrorList is several problems of one agent file, in file order. Its text
// has one problem per line.
type ErrorList []*Error

func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap gives errors.Is and errors.As each problem.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// err returns nil, the single error, or the list.
func (l ErrorList) err() error {
	switch len(l) {
	case 0:
		return nil
	case 1:
		return l[0]
	}
	return l
}
