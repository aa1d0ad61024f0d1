package jsonparser

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/feedback"
)

// field is one field of a JSON object, in the order written.
type field struct {
	name  string
	value json.RawMessage
}

// fields decodes a valid JSON object into its fields in order. It returns
// the name of the first field given twice, if any.
func fields(raw []byte) (fs []field, dup string, err error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, "", err
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, "", err
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, "", err
		}
		if seen[name] && dup == "" {
			dup = name
		}
		seen[name] = true
		fs = append(fs, field{name, v})
	}
	if _, err := dec.Token(); err != nil && !errors.Is(err, io.EOF) { // '}'
		return nil, "", err
	}
	return fs, dup, nil
}

// object is a decoded candidate: its fields by role.
type object struct {
	tool, final, args *field
	argsFields        int // how many of "args" and "arguments" are given
	rest              []field
}

func (p *Parser) split(fs []field) object {
	var o object
	for i := range fs {
		f := &fs[i]
		switch {
		case f.name == FieldTool:
			o.tool = f
		case f.name == FieldFinal:
			o.final = f
		case f.name == FieldArgs || f.name == FieldArguments:
			o.args = f
			o.argsFields++
		case p.ignore[f.name]:
		default:
			o.rest = append(o.rest, *f)
		}
	}
	return o
}

// decide turns the one JSON object of a reply into a decision.
func (p *Parser) decide(c candidate) polyloop.Decision {
	if !utf8.Valid(c.raw) {
		return notUTF8()
	}
	fs, dup, err := fields(c.raw)
	switch {
	case err != nil:
		return malformed(c.place(err))
	case dup != "":
		return duplicateField(dup)
	}
	o := p.split(fs)
	switch {
	case o.final != nil && o.tool != nil:
		return toolAndFinal()
	case o.final != nil:
		return finalDecision(o)
	case o.tool == nil:
		return missingTool(fs)
	}
	var name string
	if json.Unmarshal(o.tool.value, &name) != nil || name == "" {
		return badToolName(o.tool.value)
	}
	args, inv := p.arguments(name, o)
	if inv != nil {
		return *inv
	}
	if err := polyloop.CheckJSONLimits(args); err != nil {
		return polyloop.Invalid{Feedback: fmt.Sprintf("The arguments of %s are beyond what a run can record: %v. Send smaller, flatter arguments.", feedback.Quote(name, 64), err)}
	}
	if p.check != nil {
		if fb, ok := p.check.Check(name, args); !ok {
			return polyloop.Invalid{Feedback: fb}
		}
	}
	return polyloop.ActOne(polyloop.Action{Tool: name, Args: args})
}

func finalDecision(o object) polyloop.Decision {
	if o.args != nil || len(o.rest) > 0 {
		return unknownFinalFields(o)
	}
	var answer string
	if json.Unmarshal(o.final.value, &answer) == nil {
		return polyloop.Final{Answer: answer}
	}
	return polyloop.Final{Answer: string(compact(o.final.value))}
}

// arguments builds the action's arguments: "args", or the flattened fields.
func (p *Parser) arguments(tool string, o object) (json.RawMessage, *polyloop.Invalid) {
	switch {
	case o.argsFields > 1:
		inv := bothArgsFields()
		return nil, &inv
	case o.args != nil && len(o.rest) > 0:
		inv := unknownActionFields(o.rest)
		return nil, &inv
	case o.args != nil:
		v := compact(o.args.value)
		switch kind := feedback.JSONKind(v); kind {
		case "null":
			return json.RawMessage("{}"), nil
		case "object":
			return v, nil
		default:
			inv := argsNotObject(o.args.name, kind)
			return nil, &inv
		}
	}
	if params, ok := p.params[tool]; ok {
		if bad := notParams(o.rest, params); len(bad) > 0 {
			inv := flattenedNotParams(tool, bad, params)
			return nil, &inv
		}
	}
	return flatten(o.rest), nil
}

// notParams returns the names of fs that are not among params.
func notParams(fs []field, params []string) []string {
	var bad []string
	for _, f := range fs {
		known := false
		for _, p := range params {
			known = known || p == f.name
		}
		if !known {
			bad = append(bad, f.name)
		}
	}
	return bad
}

// flatten builds a compact JSON object of fs, in order.
func flatten(fs []field) json.RawMessage {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, f := range fs {
		if i > 0 {
			buf.WriteByte(',')
		}
		name, _ := json.Marshal(f.name)
		buf.Write(name)
		buf.WriteByte(':')
		buf.Write(compact(f.value))
	}
	buf.WriteByte('}')
	return buf.Bytes()
}

// compact returns a compact copy of a valid JSON value.
func compact(v json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if json.Compact(&buf, v) != nil {
		return append(json.RawMessage(nil), v...)
	}
	return buf.Bytes()
}
