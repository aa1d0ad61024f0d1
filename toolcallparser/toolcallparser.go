// Package toolcallparser is a polyloop.DecisionParser for native tool calls
// (ModelReply.ToolCalls), the way providers with function calling report
// actions.
//
// The rules:
//
//   - One tool call is Act with Action{CallID, Tool, Args}: the provider's
//     call id, the tool name and the arguments. The arguments must be one
//     JSON object; empty arguments and null are taken as {} (providers send
//     them for tools without parameters). Arguments that are a JSON string
//     are taken as the text of the arguments, which must then be one JSON
//     object: that is how openaimodel keeps arguments a model wrote as
//     malformed JSON (so the feedback can say where they break), and how
//     some servers double-encode them. The action's Args are a compacted
//     copy, so the decision shares no memory with the reply.
//   - A call without a name, or whose arguments are malformed JSON (the
//     feedback gives the position) or a JSON value other than an object, is
//     Invalid.
//   - No tool call is Final with the reply's text as the answer, or Invalid
//     with Options.RequireAction, for agents that must always act.
//   - More than one tool call is Invalid: one call per turn.
//
// The reply's text beside a tool call is ignored. Every Invalid decision has
// its own feedback text, pinned by testdata/decisions.golden; Version
// changes whenever a decision or a feedback text changes and enters the
// snapshot through Describe.
package toolcallparser

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/feedback"
)

// Version is the version of the parser's behaviour: its decisions and its
// feedback texts. It enters the snapshot through Describe.
const Version = 1

// Options configure a Parser. The zero value takes a reply without a tool
// call as the final answer.
type Options struct {
	// RequireAction makes a reply without a tool call Invalid instead of
	// Final, for agents that finish only through the environment's Done
	// signal.
	RequireAction bool
}

// Parser turns a reply's native tool call into a decision. It is safe for
// concurrent use.
type Parser struct {
	opts Options
}

// New returns a Parser with opts.
func New(opts Options) *Parser { return &Parser{opts: opts} }

// Describe implements polyloop.Describer: the parser's name, behaviour
// version and options enter the run's snapshot.
func (p *Parser) Describe() polyloop.Component {
	raw, err := json.Marshal(struct {
		Version       int  `json:"version"`
		RequireAction bool `json:"require_action"`
	}{Version, p.opts.RequireAction})
	if err != nil { // cannot happen: an int and a bool
		panic("toolcallparser: encoding config: " + err.Error())
	}
	return polyloop.Component{Name: "toolcallparser", Config: raw}
}

// Parse implements polyloop.DecisionParser. It is deterministic, never
// panics, and does not modify the reply.
func (p *Parser) Parse(reply polyloop.ModelReply) polyloop.Decision {
	switch n := len(reply.ToolCalls); {
	case n == 0 && p.opts.RequireAction:
		return noCall()
	case n == 0:
		return polyloop.Final{Answer: reply.Text}
	case n > 1:
		return severalCalls(reply.ToolCalls)
	}
	call := reply.ToolCalls[0]
	if call.Name == "" {
		return noName()
	}
	args, err := objectArgs(call.Args)
	if err != nil {
		return badArgs(call.Name, err)
	}
	return polyloop.ActOne(polyloop.Action{CallID: call.ID, Tool: call.Name, Args: args})
}

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
	var text string
	if feedback.JSONKind(v) == "string" && json.Unmarshal(v, &text) == nil {
		if v, err = compactValue([]byte(text)); err != nil {
			return nil, err
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
	// Unmarshal validates exactly one value and reports the offset of a
	// syntax error in raw; Compact then copies without whitespace.
	var v json.RawMessage
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
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
