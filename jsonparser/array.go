package jsonparser

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/feedback"
)

// decideArray turns the one JSON array of a reply into a decision: an
// array of one element is that element's decision; an array of several is
// a batch, one action per element in order, or Invalid naming every element
// that is not an action.
func (p *Parser) decideArray(c candidate) polyloop.Decision {
	if !utf8.Valid(c.raw) {
		return notUTF8()
	}
	elems, err := elements(c)
	if err != nil {
		return malformed(c.place(err))
	}
	switch n := len(elems); {
	case n == 1:
		return p.decide(elems[0])
	case p.maxActions > 0 && n > p.maxActions:
		return tooManyActions(n, p.maxActions)
	}
	actions := make([]polyloop.Action, 0, len(elems))
	var bad []badAction
	for i, e := range elems {
		a, inv := p.element(e)
		if inv != nil {
			bad = append(bad, badAction{index: i, feedback: inv.Feedback})
			continue
		}
		actions = append(actions, a)
	}
	if len(bad) > 0 {
		return badActions(len(elems), bad)
	}
	return polyloop.Act{Actions: actions}
}

// element is the action of one element of a batch, or the feedback saying
// why it is none.
func (p *Parser) element(e candidate) (polyloop.Action, *polyloop.Invalid) {
	if k := feedback.JSONKind(e.raw); k != "object" {
		inv := notAnActionObject(k)
		return polyloop.Action{}, &inv
	}
	switch d := p.decide(e).(type) {
	case polyloop.Act:
		return d.Actions[0], nil
	case polyloop.Final:
		inv := finalInBatch()
		return polyloop.Action{}, &inv
	case polyloop.Invalid:
		return polyloop.Action{}, &d
	}
	panic("jsonparser: decide returned no decision") // unreachable: decide returns one of the three
}

// elements splits a valid JSON array into its elements, each a candidate
// placed where it is in the reply.
func elements(c candidate) ([]candidate, error) {
	dec := json.NewDecoder(bytes.NewReader(c.raw))
	if _, err := dec.Token(); err != nil { // '['
		return nil, err
	}
	var out []candidate
	for dec.More() {
		from := int(dec.InputOffset())
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		at := from + bytes.Index(c.raw[from:], v) // past the comma and white space
		out = append(out, candidate{src: c.src, start: c.start + at, raw: c.raw[at : at+len(v)]})
	}
	return out, nil
}
