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
	return polyloop.Invalid{Feedback: "Your reply contains no tool call. Call one of the available tools."}
}

func tooManyCalls(calls []polyloop.ToolCall, limit int) polyloop.Invalid {
	names := make([]string, 0, min(len(calls), maxNamesList)+1)
	for i, c := range calls {
		if i == maxNamesList {
			names = append(names, "…")
			break
		}
		names = append(names, quoteName(c.Name))
	}
	return polyloop.Invalid{Feedback: fmt.Sprintf(
		"Your reply contains %d tool calls (%s), and none of them was run: call at most %d %s per turn.",
		len(calls), strings.Join(names, ", "), limit, plural(limit, "tool"))}
}

func noName() polyloop.Invalid {
	return polyloop.Invalid{Feedback: "Your tool call has no tool name. Call each of the available tools by its name."}
}

// badCall is an invalid call of a reply with several: its index in the
// reply, its id and what is wrong with it.
type badCall struct {
	index    int
	id       string
	feedback string
}

// badCalls is the feedback of a reply of n calls some of which are
// invalid: none runs, and each invalid call is named, up to a bound.
func badCalls(n int, bad []badCall) polyloop.Invalid {
	lines := make([]string, len(bad))
	for i, c := range bad {
		id := ""
		if c.id != "" {
			id = " (id " + quoteName(c.id) + ")"
		}
		lines[i] = fmt.Sprintf("Call %d%s: %s", c.index+1, id, c.feedback)
	}
	head := fmt.Sprintf("None of the %d tool calls of your reply was run: %d of them %s invalid.", n, len(bad), feedback.IsAre(len(bad)))
	return polyloop.Invalid{Feedback: feedback.List(head, lines, "calls", fmt.Sprintf("Send all %d calls again, corrected.", n))}
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func badArgs(name string, err error) polyloop.Invalid {
	var notObj *notObjectError
	if errors.As(err, &notObj) {
		return polyloop.Invalid{Feedback: fmt.Sprintf(
			"The arguments of your call to %s must be a JSON object, not a JSON %s. Send the arguments as one JSON object.",
			quoteName(name), notObj.kind)}
	}
	if lim, ok := errors.AsType[*polyloop.JSONLimitError](err); ok {
		return polyloop.Invalid{Feedback: fmt.Sprintf(
			"The arguments of your call to %s are beyond what a run can record: %v. Send smaller, flatter arguments.",
			quoteName(name), lim)}
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
