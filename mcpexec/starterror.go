package mcpexec

import (
	"fmt"
	"strings"
)

// StartError is the error New returns when the server could not be
// connected or its tools listed. Err is the cause (errors.Is and errors.As
// reach it: a cancelled ctx gives context.Canceled); Stderr is the end of a
// stdio server's standard error (at most StderrTail bytes), empty for other
// transports or a server that wrote nothing.
type StartError struct {
	Server string // the server's identity, as in Describe
	Stage  string // "connecting to" or "listing the tools of"
	Stderr string
	Err    error
}

func (e *StartError) Error() string {
	msg := fmt.Sprintf("mcpexec: %s %s: %v", e.Stage, e.Server, e.Err)
	if e.Stderr != "" {
		msg += "\nthe server's standard error ends with:\n\t" + strings.ReplaceAll(e.Stderr, "\n", "\n\t")
	}
	return msg
}

func (e *StartError) Unwrap() error { return e.Err }
