package argcheck

import (
	"encoding/json"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// definitions are a root schema's local definitions: "$defs" and
// "definitions", as schemas for following "#/$defs/name" references, and
// as JSON for copying into a standalone sub-schema (with "$schema").
type definitions struct {
	schemas map[string]*jsonschema.Schema // by reference: "#/$defs/name"
	raw     map[string]json.RawMessage    // "$defs", "definitions", "$schema"
}

func definitionsOf(root *jsonschema.Schema) definitions {
	d := definitions{schemas: map[string]*jsonschema.Schema{}, raw: map[string]json.RawMessage{}}
	for prefix, m := range map[string]map[string]*jsonschema.Schema{"$defs": root.Defs, "definitions": root.Definitions} {
		if len(m) == 0 {
			continue
		}
		for name, s := range m {
			d.schemas["#/"+prefix+"/"+name] = s
		}
		if raw, err := json.Marshal(m); err == nil {
			d.raw[prefix] = raw
		}
	}
	if root.Schema != "" {
		d.raw["$schema"], _ = json.Marshal(root.Schema)
	}
	return d
}

// deref follows local references to definitions, a bounded number of
// times; a reference it cannot follow leaves the schema as it is.
func (d definitions) deref(s *jsonschema.Schema) *jsonschema.Schema {
	for range 8 {
		if s == nil || !strings.HasPrefix(s.Ref, "#/") {
			return s
		}
		next, ok := d.schemas[s.Ref]
		if !ok {
			return s
		}
		s = next
	}
	return s
}
