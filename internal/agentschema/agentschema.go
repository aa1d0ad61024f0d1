// Package agentschema validates agent files against the JSON Schema of the
// agent file (docs/agent-file.schema.json), for the tests that keep the
// schema true to the examples in the repository.
package agentschema

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/goccy/go-yaml"
	"github.com/google/jsonschema-go/jsonschema"
)

// Load reads and resolves a JSON Schema file.
func Load(path string) (*jsonschema.Resolved, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s.Resolve(nil)
}

// Validate checks a YAML agent file against the schema, as the JSON
// document it converts to.
func Validate(rs *jsonschema.Resolved, src []byte) error {
	js, err := yaml.YAMLToJSON(src)
	if err != nil {
		return err
	}
	var doc any
	if err := json.Unmarshal(js, &doc); err != nil {
		return err
	}
	return rs.Validate(doc)
}
