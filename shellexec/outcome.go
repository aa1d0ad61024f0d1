package shellexec

import (
	"fmt"
	"syscall"

	"github.com/polyloop/polyloop"
)

// outcome builds the Executed outcome of a command that ran.
func (e *Executor) outcome(end ended, out *capture) polyloop.ActionOutcome {
	text, dropped, sawDone := out.result()
	text = polyloop.ValidText(text)
	status, ok := statusLine(end, e.opts)
	if dropped > 0 {
		text += fmt.Sprintf("\n[output truncated: %d characters dropped]", dropped)
	}
	return polyloop.ActionOutcome{
		Status:         polyloop.Executed,
		Observation:    status + text,
		Done:           sawDone && ok,
		TruncatedChars: dropped,
	}
}

// statusLine describes how the command ended, as the observation's first
// line, and reports whether it succeeded (exit status 0 within its timeout).
func statusLine(end ended, opts Options) (string, bool) {
	if end.timedOut {
		return fmt.Sprintf("[timed out after %s]\n", opts.Timeout), false
	}
	ws, _ := end.state.Sys().(syscall.WaitStatus)
	switch {
	case ws.Signaled():
		return fmt.Sprintf("[killed by %s]\n", signalName(ws.Signal())), false
	case end.state.ExitCode() != 0:
		return fmt.Sprintf("[exit code %d]\n", end.state.ExitCode()), false
	}
	return "", true
}
