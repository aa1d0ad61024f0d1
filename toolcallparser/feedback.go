package toolcallparser

import (
	"errors"
	"fmt"
	"strings"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/feedback"
)

// Bounds on what feedback repeats of the model's own output.
const (
	maxNameLen   = 64
	maxNamesList = 8
)

func noCall() polyloop.Invalid {
	return polyloop.Invalid{Feedback: "Your reply contains no tool call. Call exactly one of the available tools."}
}

func severalCalls(calls []polyloop.ToolCall) polyloop.Invalid {
	names := make([]string, 0, min(len(calls), maxNamesList)+1)
	for i, c := range calls {
		if i == maxNamesList {
			names = append(names, "…")
			break
		}
		names = append(names, quoteName(c.Name))
	}
	return polyloop.Invalid{Feedback: fmt.Sprintf(
		"Your reply contains %d tool calls (%s); call exactly one tool per turn.",
		len(calls), strings.Join(names, ", "))}
}

func noName() polyloop.Invalid {
	return polyloop.Invalid{Feedback: "Your tool call has no tool name. Call exactly one of the available tools by its name."}
}

func badArgs(name string, err error) polyloop.Invalid {
	var notObj *notObjectError
	if errors.As(err, &notObj) {
		return polyloop.Invalid{Feedback: fmt.Sprintf(
			"The arguments of your call to %s must be a JSON object, not a JSON %s. Send the arguments as one JSON object.",
			quoteName(name), notObj.kind)}
	}
	if errors.Is(err, errNotUTF8) {
		return polyloop.Invalid{Feedback: fmt.Sprintf(
			"The arguments of your call to %s are not valid UTF-8 text. Send the arguments as one JSON object in UTF-8.",
			quoteName(name))}
	}
	where := ""
	if off := syntaxOffset(err); off >= 0 {
		where = fmt.Sprintf(" (at byte %d)", off)
	}
	return polyloop.Invalid{Feedback: fmt.Sprintf(
		"The arguments of your call to %s are not valid JSON: %s%s. Send the arguments as one JSON object.",
		quoteName(name), err.Error(), where)}
}

// quoteName quotes a tool name from the model, cut to a bounded length.
func quoteName(s string) string { return feedback.Quote(s, maxNameLen) }
