// Package argcheck checks the arguments of a tool call against the tool's
// parameter schema, for the parsers (toolcallparser, jsonparser), and says
// in words what does not match: the field, by its path, and what it must
// be.
//
// Validation is github.com/google/jsonschema-go's, the library funcexec
// and mcpexec validate with. The explanation is made from the schema and the
// arguments only — never from the validator's error text — so that it is
// reproducible: the same schema and arguments give the same feedback, with
// any version of the library. A parser whose decisions depend on this
// package must change its Version when the texts here change.
package argcheck

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/polyloop/polyloop"
)

// Checker checks arguments against the schemas of the tools it was made
// with. It is safe for concurrent use.
type Checker struct {
	tools map[string]*tool
	names []string // the checked tools, sorted
	hash  string
}

// tool is one checked tool's schema: resolved whole, and each of its
// sub-schemas that the explanation descends into, resolved on its own.
type tool struct {
	root *jsonschema.Schema
	// whole validates the arguments; parts validates a value against a
	// sub-schema of root (with root's definitions).
	whole *jsonschema.Resolved
	parts map[*jsonschema.Schema]*jsonschema.Resolved
	defs  definitions
}

// New returns a Checker of the tools whose parameter schema is given and
// usable: a tool without Parameters, or whose schema is not JSON or cannot
// be resolved for validation, is not checked (its executor judges its
// arguments), and is left out of Tools and Hash.
func New(specs []polyloop.ToolSpec) *Checker {
	c := &Checker{tools: map[string]*tool{}}
	schemas := map[string]json.RawMessage{}
	for _, s := range specs {
		if len(bytes.TrimSpace(s.Parameters)) == 0 {
			continue
		}
		raw, t, ok := newTool(s.Parameters)
		if !ok {
			continue
		}
		c.tools[s.Name] = t
		schemas[s.Name] = raw
	}
	if len(c.tools) == 0 {
		return c
	}
	for name := range c.tools {
		c.names = append(c.names, name)
	}
	sort.Strings(c.names)
	c.hash = hashOf(c.names, schemas)
	return c
}

// newTool resolves a schema and its parts. It returns the schema compacted.
func newTool(params json.RawMessage) (json.RawMessage, *tool, bool) {
	var buf bytes.Buffer
	if json.Compact(&buf, params) != nil {
		return nil, nil, false
	}
	root, whole, err := resolve(buf.Bytes())
	if err != nil {
		return nil, nil, false
	}
	t := &tool{root: root, whole: whole, parts: map[*jsonschema.Schema]*jsonschema.Resolved{}, defs: definitionsOf(root)}
	if !t.resolveParts(root, 0) {
		return nil, nil, false
	}
	return buf.Bytes(), t, true
}

func resolve(raw []byte) (*jsonschema.Schema, *jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, nil, err
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return nil, nil, err
	}
	return &s, r, nil
}

// maxDepth bounds how deep the explanation descends into a schema.
const maxDepth = 8

// resolveParts resolves, for each sub-schema the explanation may validate a
// value against (properties and array items, through local references), a
// schema of its own holding it and root's definitions.
func (t *tool) resolveParts(s *jsonschema.Schema, depth int) bool {
	s = t.defs.deref(s)
	if s == nil || depth == maxDepth {
		return true
	}
	subs := make([]*jsonschema.Schema, 0, len(s.Properties)+1)
	for _, name := range sortedKeys(s.Properties) {
		subs = append(subs, s.Properties[name])
	}
	if s.Items != nil {
		subs = append(subs, s.Items)
	}
	for _, sub := range subs {
		if _, done := t.parts[sub]; done {
			continue
		}
		r, err := t.standalone(sub)
		if err != nil {
			return false
		}
		t.parts[sub] = r
		if !t.resolveParts(sub, depth+1) {
			return false
		}
	}
	return true
}

// standalone resolves a copy of sub with root's $schema and definitions,
// so that its local references still resolve.
func (t *tool) standalone(sub *jsonschema.Schema) (*jsonschema.Resolved, error) {
	raw, err := json.Marshal(sub)
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		// A boolean schema (true or false) has no fields to add to.
		_, r, err := resolve(raw)
		return r, err
	}
	for key, v := range t.defs.raw {
		if _, own := fields[key]; !own {
			fields[key] = v
		}
	}
	if raw, err = json.Marshal(fields); err != nil {
		return nil, err
	}
	_, r, err := resolve(raw)
	return r, err
}

// Tools are the names of the checked tools, sorted.
func (c *Checker) Tools() []string { return c.names }

// Hash is "sha256:" and the hex SHA-256 of the checked tools' names and
// compacted schemas, or "" when no tool is checked: what changes the
// checker's decisions, for a parser's Describe.
func (c *Checker) Hash() string { return c.hash }

func hashOf(names []string, schemas map[string]json.RawMessage) string {
	type entry struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
	}
	entries := make([]entry, len(names))
	for i, n := range names {
		entries[i] = entry{n, schemas[n]}
	}
	raw, err := json.Marshal(entries)
	if err != nil { // cannot happen: strings and compacted JSON
		panic("argcheck: encoding schemas: " + err.Error())
	}
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Check checks args (a JSON object) against the schema of tool. It returns
// ok for arguments that match, for a tool that is not checked, and for
// arguments it cannot decode (a number out of float64's range: the
// executor judges those); otherwise the feedback that says what does not
// match.
func (c *Checker) Check(toolName string, args json.RawMessage) (feedback string, ok bool) {
	t := c.tools[toolName]
	if t == nil {
		return "", true
	}
	var instance any
	if json.Unmarshal(args, &instance) != nil {
		return "", true
	}
	if t.whole.Validate(instance) == nil {
		return "", true
	}
	return t.explain(toolName, instance), false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
