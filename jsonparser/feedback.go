package jsonparser

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/feedback"
)

// Bounds on what feedback repeats of the model's own output.
const (
	maxNameLen   = 64
	maxNamesList = 10
)

// formatHint ends the feedback of failures that suggest the model did not
// follow the format at all.
const formatHint = `Reply with one JSON object: {"tool": "<name>", "args": {...}} to call a tool (to call several, a JSON array of such objects), or {"final": "<answer>"} to finish.`

func invalid(format string, a ...any) polyloop.Invalid {
	return polyloop.Invalid{Feedback: fmt.Sprintf(format, a...)}
}

func emptyReply() polyloop.Invalid { return invalid("Your reply is empty. %s", formatHint) }

func noJSON() polyloop.Invalid {
	return invalid("Your reply contains no JSON object. %s", formatHint)
}

func malformed(m *malformedJSON) polyloop.Invalid {
	return invalid("The JSON in your reply is malformed at line %d, column %d: %s. Send the action again as valid JSON.",
		m.line, m.column, m.message)
}

func unclosedFence(line int) polyloop.Invalid {
	return invalid("The code fence opened at line %d of your reply is never closed, so the JSON in it cannot be unwrapped. Close the fence with ``` on its own line, or send the JSON object without a fence.", line)
}

func emptyFence(line int) polyloop.Invalid {
	return invalid("The JSON code fence opened at line %d of your reply holds no JSON object. %s", line, formatHint)
}

func severalObjects(n int) polyloop.Invalid {
	return invalid("Your reply contains %d separate JSON actions; send one action as one JSON object, or several actions as one JSON array of objects.", n)
}

func tooManyActions(n, limit int) polyloop.Invalid {
	return invalid("Your JSON array holds %d actions, and none of them was run: send at most %d %s per turn.", n, limit, plural(limit, "action"))
}

func notAnActionObject(kind string) polyloop.Invalid {
	return invalid(`This is a JSON %s, not an action object. Each element of the array must be {"tool": "<name>", "args": {...}}.`, kind)
}

func finalInBatch() polyloop.Invalid {
	return invalid(`This is a final answer, which cannot share an array with actions: send {"final": "<answer>"} alone, once the actions have run.`)
}

// badAction is an invalid element of an array: its index and what is wrong
// with it.
type badAction struct {
	index    int
	feedback string
}

// badActions is the feedback of an array of n elements some of which are
// not valid actions: none runs, and each invalid element is named, up to a
// bound.
func badActions(n int, bad []badAction) polyloop.Invalid {
	lines := make([]string, len(bad))
	for i, a := range bad {
		lines[i] = fmt.Sprintf("Action %d: %s", a.index+1, a.feedback)
	}
	head := fmt.Sprintf("None of the %d actions of your JSON array was run: %d of them %s invalid.", n, len(bad), feedback.IsAre(len(bad)))
	return polyloop.Invalid{Feedback: feedback.List(head, lines, "actions", "Send the array again, corrected.")}
}

func notUTF8() polyloop.Invalid {
	return invalid("The JSON object in your reply is not valid UTF-8 text. Send it again in UTF-8.")
}

func duplicateField(name string) polyloop.Invalid {
	return invalid("The JSON object in your reply has the field %s twice. Give each field once.", quote(name))
}

func toolAndFinal() polyloop.Invalid {
	return invalid(`The JSON object in your reply has both "tool" and "final". Send either an action or a final answer, not both.`)
}

func missingTool(fs []field) polyloop.Invalid {
	has := "it has no fields"
	if len(fs) > 0 {
		has = "its fields: " + names(fs)
	}
	return invalid(`The JSON object in your reply has no "tool" field naming the tool to call (%s). %s`, has, formatHint)
}

func badToolName(v json.RawMessage) polyloop.Invalid {
	what := "an empty string"
	if k := feedback.JSONKind(v); k != "string" {
		what = "a JSON " + k
	}
	return invalid(`The "tool" field must be the name of the tool to call, a non-empty string, not %s.`, what)
}

func bothArgsFields() polyloop.Invalid {
	return invalid(`The JSON object in your reply has both "args" and "arguments". Put the arguments in "args" only.`)
}

func argsNotObject(name, kind string) polyloop.Invalid {
	return invalid(`The %s field must be a JSON object holding the arguments by name, not a JSON %s.`, quote(name), kind)
}

func unknownActionFields(rest []field) polyloop.Invalid {
	return invalid(`The JSON object in your reply has unknown %s %s beside "tool" and "args". Put every argument inside "args".`,
		plural(len(rest), "field"), names(rest))
}

func unknownFinalFields(o object) polyloop.Invalid {
	extra := o.rest
	if o.args != nil {
		extra = append([]field{*o.args}, extra...)
	}
	return invalid(`The final answer has unknown %s %s. Send only {"final": "<answer>"}.`, plural(len(extra), "field"), names(extra))
}

func flattenedNotParams(tool string, bad, params []string) polyloop.Invalid {
	verb := "is not a parameter"
	if len(bad) > 1 {
		verb = "are not parameters"
	}
	return invalid(`The %s %s of your call to %s %s of that tool (its parameters: %s). Put the arguments inside "args".`,
		plural(len(bad), "field"), quoteList(bad), quote(tool), verb, quoteList(params))
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func names(fs []field) string {
	ns := make([]string, len(fs))
	for i, f := range fs {
		ns[i] = f.name
	}
	return quoteList(ns)
}

// quoteList quotes names, bounding their number and length.
func quoteList(ns []string) string {
	out := make([]string, 0, min(len(ns), maxNamesList)+1)
	for i, n := range ns {
		if i == maxNamesList {
			out = append(out, fmt.Sprintf("and %d more", len(ns)-i))
			break
		}
		out = append(out, quote(n))
	}
	return strings.Join(out, ", ")
}

// quote quotes a name from the model, cut to a bounded length.
func quote(s string) string { return feedback.Quote(s, maxNameLen) }
