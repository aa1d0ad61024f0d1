// Package toolcallparser is a polyloop.DecisionParser for native tool calls
// (ModelReply.ToolCalls), the way providers with function calling report
// actions.
//
// The rules:
//
//   - The tool calls of a reply are one Act, a batch with one
//     Action{CallID, Tool, Args} per call, in the reply's order: the
//     provider's call id, the tool name and the arguments. The arguments
//     must be one JSON object; empty arguments and null are taken as {}
//     (providers send them for tools without parameters). Arguments that
//     are a JSON string are taken as the text of the arguments, which must
//     then be one JSON object: that is how openaimodel keeps arguments a
//     model wrote as malformed JSON (so the feedback can say where they
//     break), and how some servers double-encode them. The action's Args
//     are a compacted copy, so the decision shares no memory with the
//     reply.
//   - A call without a name, or whose arguments are malformed JSON (the
//     feedback gives the position) or a JSON value other than an object, is
//     invalid. One invalid call makes the whole reply Invalid — no call of
//     it runs — and the feedback names every invalid call by its place in
//     the reply and its id.
//   - Arguments that do not match the parameter schema of their tool, for
//     the tools given in Options.Tools, are invalid: the feedback names the
//     field and what it must be (see Options.Tools).
//   - More tool calls than Options.MaxActionsPerStep (when it is positive)
//     is Invalid, naming the limit.
//   - No tool call is Final with the reply's text as the answer, or Invalid
//     with Options.RequireAction, for agents that must always act.
//
// The reply's text beside the tool calls is ignored. Every Invalid decision
// has its own feedback text, pinned by testdata/decisions.golden; Version
// changes whenever a decision or a feedback text changes and enters the
// snapshot through Describe.
package toolcallparser

import (
	"encoding/json"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/argcheck"
)

// Version is the version of the parser's behaviour: its decisions and its
// feedback texts. It enters the snapshot through Describe.
const Version = 2

// Options configure a Parser. The zero value takes a reply without a tool
// call as the final answer and accepts any number of calls per reply.
type Options struct {
	// RequireAction makes a reply without a tool call Invalid instead of
	// Final, for agents that finish only through the environment's Done
	// signal.
	RequireAction bool
	// MaxActionsPerStep bounds the tool calls of one reply; a reply with
	// more is Invalid. Zero or less: no bound.
	MaxActionsPerStep int
	// Tools are the agent's tool specs (the snapshot's). The arguments of a
	// call to one of them are checked against its parameter schema, with
	// github.com/google/jsonschema-go: arguments that do not match are
	// Invalid, and the feedback names the field and the type or values it
	// must have, so that the model can correct the call (an executor that
	// refuses them could only give the agent's generic synthetic text). The
	// check is made from the schema and the arguments alone, so it is
	// deterministic. A tool without Parameters, whose schema cannot be
	// resolved, or that is not listed, is not checked: its executor judges
	// its arguments. Describe names the checked tools and a hash of their
	// schemas.
	Tools []polyloop.ToolSpec
	// SkipArgCheck turns the check of arguments against Tools off.
	SkipArgCheck bool
}

// Parser turns a reply's native tool calls into a decision. It is safe for
// concurrent use.
type Parser struct {
	opts  Options
	check *argcheck.Checker // nil: no argument check
}

// New returns a Parser with opts.
func New(opts Options) *Parser {
	if opts.MaxActionsPerStep < 0 {
		opts.MaxActionsPerStep = 0
	}
	p := &Parser{opts: opts}
	if !opts.SkipArgCheck {
		if c := argcheck.New(opts.Tools); len(c.Tools()) > 0 {
			p.check = c
		}
	}
	p.opts.Tools = nil // the checker holds what it needs
	return p
}

// argCheck is what Describe says of the argument check: the checked tools
// and the hash of their schemas (argcheck.Checker.Hash).
type argCheck struct {
	Tools   []string `json:"tools"`
	Schemas string   `json:"schemas"`
}

func describeCheck(c *argcheck.Checker) *argCheck {
	if c == nil {
		return nil
	}
	return &argCheck{Tools: c.Tools(), Schemas: c.Hash()}
}

// Describe implements polyloop.Describer: the parser's name, behaviour
// version and options enter the run's snapshot. With the argument check on,
// "arg_check" names the checked tools and "sha256:" and the hex SHA-256 of
// the JSON array of {"name", "schema"} (the compacted schema) of each,
// sorted by name.
func (p *Parser) Describe() polyloop.Component {
	raw, err := json.Marshal(struct {
		Version       int       `json:"version"`
		RequireAction bool      `json:"require_action"`
		MaxActions    int       `json:"max_actions_per_step,omitempty"`
		ArgCheck      *argCheck `json:"arg_check,omitempty"`
	}{Version, p.opts.RequireAction, p.opts.MaxActionsPerStep, describeCheck(p.check)})
	if err != nil { // cannot happen: ints, a bool and strings
		panic("toolcallparser: encoding config: " + err.Error())
	}
	return polyloop.Component{Name: "toolcallparser", Config: raw}
}

// Parse implements polyloop.DecisionParser. It is deterministic, never
// panics, and does not modify the reply.
func (p *Parser) Parse(reply polyloop.ModelReply) polyloop.Decision {
	calls := reply.ToolCalls
	switch n := len(calls); {
	case n == 0 && p.opts.RequireAction:
		return noCall()
	case n == 0:
		return polyloop.Final{Answer: reply.Text}
	case p.opts.MaxActionsPerStep > 0 && n > p.opts.MaxActionsPerStep:
		return tooManyCalls(calls, p.opts.MaxActionsPerStep)
	}
	actions := make([]polyloop.Action, len(calls))
	var bad []badCall
	for i, c := range calls {
		a, inv := p.action(c)
		if inv != nil {
			bad = append(bad, badCall{index: i, id: c.ID, feedback: inv.Feedback})
			continue
		}
		actions[i] = a
	}
	switch {
	case len(bad) > 0 && len(calls) == 1:
		return polyloop.Invalid{Feedback: bad[0].feedback}
	case len(bad) > 0:
		return badCalls(len(calls), bad)
	}
	return polyloop.Act{Actions: actions}
}

// action is the action of one tool call, or the feedback saying what is
// wrong with it.
func (p *Parser) action(c polyloop.ToolCall) (polyloop.Action, *polyloop.Invalid) {
	if c.Name == "" {
		inv := noName()
		return polyloop.Action{}, &inv
	}
	args, err := objectArgs(c.Args)
	if err != nil {
		inv := badArgs(c.Name, err)
		return polyloop.Action{}, &inv
	}
	if p.check != nil {
		if fb, ok := p.check.Check(c.Name, args); !ok {
			return polyloop.Action{}, &polyloop.Invalid{Feedback: fb}
		}
	}
	return polyloop.Action{CallID: c.ID, Tool: c.Name, Args: args}, nil
}
