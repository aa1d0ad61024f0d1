package jsonparser

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/argcheck"
)

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

// Version is the version of the parser's behaviour: its decisions and its
// feedback texts. It enters the snapshot through Describe.
const Version = 2

// The field names of the accepted shapes.
const (
	FieldTool      = "tool"
	FieldArgs      = "args"
	FieldArguments = "arguments" // accepted in place of "args"
	FieldFinal     = "final"
)

// Options configure a Parser. The zero value accepts flattened arguments of
// any name, ignores no field, accepts any number of actions in an array and
// makes a reply without JSON Invalid.
type Options struct {
	// Tools are the agent's tool specs (the snapshot's). A tool listed here
	// whose parameter schema declares "properties" accepts flattened
	// arguments only among those properties. And the arguments of an action
	// of a listed tool are checked against its parameter schema, with
	// github.com/google/jsonschema-go: arguments that do not match are
	// Invalid, and the feedback names the field and the type or values it
	// must have, so that the model can correct the action. The check is
	// made from the schema and the arguments alone, so it is deterministic.
	// A tool without Parameters, whose schema cannot be resolved, or that
	// is not listed, is not checked: its executor judges its arguments.
	Tools []polyloop.ToolSpec
	// SkipArgCheck turns the check of arguments against Tools' schemas off
	// (the check of flattened fields stays).
	SkipArgCheck bool
	// Ignore names action-level fields that are accepted and dropped, such
	// as "thought" or "reasoning". The field names of the shapes themselves
	// cannot be ignored.
	Ignore []string
	// TextIsFinal makes a reply holding no JSON object (and no ```json
	// fence) a Final decision whose answer is the whole text, instead of
	// Invalid.
	TextIsFinal bool
	// MaxActionsPerStep bounds the actions of one JSON array; an array with
	// more is Invalid. Zero or less: no bound.
	MaxActionsPerStep int
}

// Parser reads one JSON action, or a JSON array of them, from a reply's
// text. It is safe for concurrent use.
type Parser struct {
	params      map[string][]string // tool → sorted properties, for tools whose schema declares them
	ignore      map[string]bool
	textIsFinal bool
	maxActions  int               // 0: no bound
	check       *argcheck.Checker // nil: no argument check
}

// New returns a Parser with opts. Tool schemas that are not JSON objects,
// or declare no properties, leave flattened arguments of that tool
// unchecked.
func New(opts Options) *Parser {
	p := &Parser{params: map[string][]string{}, ignore: map[string]bool{}, textIsFinal: opts.TextIsFinal,
		maxActions: max(opts.MaxActionsPerStep, 0)}
	for _, t := range opts.Tools {
		if props, ok := schemaProperties(t.Parameters); ok {
			p.params[t.Name] = props
		}
	}
	if !opts.SkipArgCheck {
		if c := argcheck.New(opts.Tools); len(c.Tools()) > 0 {
			p.check = c
		}
	}
	for _, f := range opts.Ignore {
		if f != FieldTool && f != FieldArgs && f != FieldArguments && f != FieldFinal {
			p.ignore[f] = true
		}
	}
	return p
}

// schemaProperties returns the sorted property names of a JSON Schema
// object, and whether it declares any.
func schemaProperties(schema json.RawMessage) ([]string, bool) {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return nil, false
	}
	props := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		props = append(props, k)
	}
	sort.Strings(props)
	return props, true
}

// Describe implements polyloop.Describer: the parser's name, behaviour
// version and the options that change its decisions (the parameters of each
// checked tool, the ignored fields, TextIsFinal, MaxActionsPerStep) enter
// the run's snapshot. With the argument check on, "arg_check" names the
// checked tools and "sha256:" and the hex SHA-256 of the JSON array of
// {"name", "schema"} (the compacted schema) of each, sorted by name.
func (p *Parser) Describe() polyloop.Component {
	ignore := make([]string, 0, len(p.ignore))
	for f := range p.ignore {
		ignore = append(ignore, f)
	}
	sort.Strings(ignore)
	raw, err := json.Marshal(struct {
		Version     int                 `json:"version"`
		Params      map[string][]string `json:"tool_params,omitempty"`
		Ignore      []string            `json:"ignore,omitempty"`
		TextIsFinal bool                `json:"text_is_final"`
		MaxActions  int                 `json:"max_actions_per_step,omitempty"`
		ArgCheck    *argCheck           `json:"arg_check,omitempty"`
	}{Version, p.params, ignore, p.textIsFinal, p.maxActions, describeCheck(p.check)})
	if err != nil { // cannot happen: strings, a bool and an int
		panic("jsonparser: encoding config: " + err.Error())
	}
	return polyloop.Component{Name: "jsonparser", Config: raw}
}

// Parse implements polyloop.DecisionParser. It is deterministic, never
// panics, and does not modify the reply.
func (p *Parser) Parse(reply polyloop.ModelReply) polyloop.Decision {
	f := find(reply.Text)
	switch {
	case f.unclosed != nil:
		return unclosedFence(f.unclosed.Line)
	case f.actions() > 1:
		return severalObjects(f.actions())
	case len(f.objects) == 1:
		return p.decide(f.objects[0])
	case len(f.arrays) == 1:
		return p.decideArray(f.arrays[0])
	case f.firstJSONish != nil:
		return malformed(f.firstJSONish)
	case f.emptyFence != nil:
		return emptyFence(f.emptyFence.Line)
	case p.textIsFinal:
		return polyloop.Final{Answer: reply.Text}
	case f.firstProse != nil:
		return malformed(f.firstProse)
	case strings.TrimSpace(reply.Text) == "":
		return emptyReply()
	}
	return noJSON()
}
