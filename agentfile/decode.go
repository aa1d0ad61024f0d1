package agentfile

import (
	"errors"
	"fmt"
	"os"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// decode reads and parses the file and decodes it strictly into a File:
// a syntax error, a duplicate key, an unknown key or a value of the wrong
// type is an *Error with its position.
func decode(name string) (*File, *locator, error) {
	src, err := os.ReadFile(name)
	if err != nil {
		return nil, nil, &Error{File: name, Msg: fmt.Sprintf("cannot read the agent file: %v", err)}
	}
	tree, err := parser.ParseBytes(src, 0)
	if err != nil {
		return nil, nil, yamlError(name, err)
	}
	loc := &locator{file: name, ast: tree}
	if len(tree.Docs) != 1 || tree.Docs[0].Body == nil {
		return nil, nil, &Error{File: name, Line: 1, Column: 1, Msg: fmt.Sprintf("expected one YAML document holding a mapping, found %d documents", len(tree.Docs))}
	}
	body := tree.Docs[0].Body
	// Secrets first: a key under a misspelt name is refused as a secret.
	v := &validator{loc: loc}
	v.scanSecrets(body)
	if err := v.sorted().err(); err != nil {
		return nil, nil, err
	}
	if body.Type() != ast.MappingType {
		line, col, _ := nodePosition(body)
		return nil, nil, &Error{File: name, Line: line, Column: col, Msg: "expected a mapping of agent fields (name, model, parser, tools, limits, ...)"}
	}
	var f File
	if err := yaml.NodeToValue(body, &f, yaml.Strict()); err != nil {
		return nil, nil, yamlError(name, err)
	}
	return &f, loc, nil
}

// yamlError turns a go-yaml error into an *Error with its position and a
// message that says what was expected.
func yamlError(name string, err error) *Error {
	e := &Error{File: name, Msg: err.Error()}
	var ye yaml.Error
	if !errors.As(err, &ye) {
		return e
	}
	e.Msg = ye.GetMessage()
	if tk := ye.GetToken(); tk != nil && tk.Position != nil {
		e.Line, e.Column = tk.Position.Line, tk.Position.Column
	}
	var unknown *yaml.UnknownFieldError
	var typeErr *yaml.TypeError
	switch {
	case errors.As(err, &unknown):
		e.Msg += " (a typo must not silently become a default; see the agent file reference for the accepted keys)"
	case errors.As(err, &typeErr):
		e.Msg = fmt.Sprintf("expected a value of type %s, found %s", typeName(typeErr.DstType.String()), typeErr.SrcType)
	}
	return e
}

// typeName says a Go type in agent-file words.
func typeName(goType string) string {
	switch goType {
	case "int", "int64", "uint", "uint64":
		return "integer"
	case "float64", "float32":
		return "number"
	case "string":
		return "string"
	case "bool":
		return "boolean (true or false)"
	}
	return goType
}
