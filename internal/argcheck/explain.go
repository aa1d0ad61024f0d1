package argcheck

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/polyloop/polyloop/internal/feedback"
)

// Bounds on what feedback repeats of the schema and of the model's output.
const (
	maxPathLen   = 128
	maxSchemaLen = 300
	maxListed    = 10
)

// mismatchKind is what is wrong at a path.
type mismatchKind int

const (
	missingField mismatchKind = iota
	wrongType
	notInEnum
	unknownField
	noMatch
)

// mismatch is the first thing found wrong with the arguments: where, and
// what the schema wants there.
type mismatch struct {
	kind   mismatchKind
	path   []string // field names, and "[i]" for array items
	want   []string // types (missingField, wrongType)
	got    string   // the value's type (wrongType)
	enum   []any    // notInEnum
	fields []string // the fields allowed beside an unknown one
	schema *jsonschema.Schema
}

// explain says what of instance does not match the tool's schema: the
// first mismatch found descending from the root (required fields in the
// schema's order, then fields in name order), or, when no single field is
// at fault (a rule across fields, such as oneOf), the whole schema.
func (t *tool) explain(toolName string, instance any) string {
	obj, _ := instance.(map[string]any)
	if m := t.inObject(t.root, obj, nil, 0); m != nil {
		return m.feedback(toolName)
	}
	return fmt.Sprintf("The arguments of your call to %s do not match the tool's parameter schema: %s.",
		quote(toolName), schemaText(t.root))
}

// inObject looks for a mismatch in an object value of schema s.
func (t *tool) inObject(s *jsonschema.Schema, obj map[string]any, path []string, depth int) *mismatch {
	s = t.defs.deref(s)
	for _, r := range s.Required {
		if _, ok := obj[r]; !ok {
			return &mismatch{kind: missingField, path: at(path, r), want: types(t.defs.deref(s.Properties[r]))}
		}
	}
	for _, k := range sortedKeys(obj) {
		sub, declared := s.Properties[k]
		if !declared {
			if closed(s) {
				return &mismatch{kind: unknownField, path: at(path, k), fields: sortedKeys(s.Properties)}
			}
			continue
		}
		if m := t.value(sub, obj[k], at(path, k), depth+1); m != nil {
			return m
		}
	}
	return nil
}

// value looks for a mismatch in v, of schema sub, at path.
func (t *tool) value(sub *jsonschema.Schema, v any, path []string, depth int) *mismatch {
	r := t.parts[sub]
	if r == nil || r.Validate(v) == nil { // beyond the depth resolved, or a match
		return nil
	}
	d := t.defs.deref(sub)
	if want := types(d); len(want) > 0 && !typeIn(jsonType(v), want) {
		return &mismatch{kind: wrongType, path: path, want: want, got: jsonType(v)}
	}
	switch v := v.(type) {
	case map[string]any:
		if m := t.inObject(d, v, path, depth); m != nil {
			return m
		}
	case []any:
		if d.Items != nil {
			for i, item := range v {
				if m := t.value(d.Items, item, at(path, "["+strconv.Itoa(i)+"]"), depth+1); m != nil {
					return m
				}
			}
		}
	}
	if len(d.Enum) > 0 {
		return &mismatch{kind: notInEnum, path: path, enum: d.Enum}
	}
	return &mismatch{kind: noMatch, path: path, schema: d}
}

func at(path []string, elem string) []string {
	return append(path[:len(path):len(path)], elem)
}

// types are the types a schema allows, or nil when it does not say.
func types(s *jsonschema.Schema) []string {
	switch {
	case s == nil:
		return nil
	case s.Type != "":
		return []string{s.Type}
	}
	return s.Types
}

// typeIn reports whether a value of type got passes "type": want; an
// integer is a number.
func typeIn(got string, want []string) bool {
	return slices.Contains(want, got) || got == "integer" && slices.Contains(want, "number")
}

// jsonType is the JSON Schema type of a decoded JSON value: whole numbers
// are integers, as the validator counts them.
func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		if _, frac := math.Modf(v); frac == 0 {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	}
	return "object"
}

// closed reports whether s allows no properties beyond its own:
// "additionalProperties": false and no patternProperties.
func closed(s *jsonschema.Schema) bool {
	if s.AdditionalProperties == nil || len(s.PatternProperties) > 0 {
		return false
	}
	raw, err := json.Marshal(s.AdditionalProperties)
	return err == nil && (string(raw) == "false" || string(raw) == `{"not":{}}`)
}

func (m *mismatch) feedback(toolName string) string {
	field, call := quotePath(m.path), quote(toolName)
	switch m.kind {
	case missingField:
		what := ""
		if len(m.want) > 0 {
			what = " (" + typeNames(m.want) + ")"
		}
		return fmt.Sprintf("The arguments of your call to %s lack the required field %s%s.", call, field, what)
	case wrongType:
		got := m.got
		if got == "integer" { // for people, 12 is a number
			got = "number"
		}
		return fmt.Sprintf("The field %s of your call to %s must be %s, not %s.", field, call, typeNames(m.want), typeName(got))
	case notInEnum:
		return fmt.Sprintf("The field %s of your call to %s must be one of %s.", field, call, enumText(m.enum))
	case unknownField:
		allowed := "none"
		if len(m.fields) > 0 {
			allowed = quoteList(m.fields)
		}
		if len(m.path) == 1 {
			return fmt.Sprintf("The field %s of your call to %s is not a parameter of that tool (its parameters: %s).", field, call, allowed)
		}
		return fmt.Sprintf("The field %s of your call to %s is not a field of %s (its fields: %s).",
			field, call, quotePath(m.path[:len(m.path)-1]), allowed)
	}
	return fmt.Sprintf("The field %s of your call to %s does not match its schema: %s.", field, call, schemaText(m.schema))
}

func typeName(t string) string {
	switch t {
	case "null":
		return "null"
	case "integer", "object", "array":
		return "an " + t
	}
	return "a " + t
}

func typeNames(ts []string) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = typeName(t)
	}
	return strings.Join(names, " or ")
}

// enumText lists the allowed values as compact JSON, up to a bound.
func enumText(values []any) string {
	out := make([]string, 0, min(len(values), maxListed)+1)
	for i, v := range values {
		if i == maxListed {
			out = append(out, fmt.Sprintf("and %d more", len(values)-i))
			break
		}
		raw, err := json.Marshal(v)
		if err != nil {
			raw = []byte("?")
		}
		out = append(out, feedback.Bounded(string(raw), maxPathLen))
	}
	return strings.Join(out, ", ")
}

// schemaText is a schema as compact JSON with sorted keys (whatever order
// the library encodes its fields in), cut to a bound.
func schemaText(s *jsonschema.Schema) string {
	raw, err := json.Marshal(s)
	if err != nil {
		return "(a schema that cannot be shown)"
	}
	var v any
	if json.Unmarshal(raw, &v) == nil {
		if sorted, err := json.Marshal(v); err == nil {
			raw = sorted
		}
	}
	return feedback.Bounded(string(raw), maxSchemaLen)
}

func quotePath(path []string) string {
	var b strings.Builder
	for i, p := range path {
		if i > 0 && !strings.HasPrefix(p, "[") {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return feedback.Quote(b.String(), maxPathLen)
}

func quote(s string) string { return feedback.Quote(s, 64) }

func quoteList(names []string) string {
	out := make([]string, 0, min(len(names), maxListed)+1)
	for i, n := range names {
		if i == maxListed {
			out = append(out, fmt.Sprintf("and %d more", len(names)-i))
			break
		}
		out = append(out, quote(n))
	}
	return strings.Join(out, ", ")
}
