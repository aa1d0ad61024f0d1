package agentfile

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// decoded is an agent file read and decoded: the File, where its values are
// (for the checks that follow), and the problems found so far.
type decoded struct {
	f    *File
	loc  *locator
	errs ErrorList
	// failed are the paths whose value did not decode (see fieldDecoder).
	failed []path
	// secret is set when a value looks like a secret: the checks that
	// follow, whose messages may quote values, must not run.
	secret bool
}

// decode reads, parses and decodes the agent file. A file that cannot be
// decoded at all (unreadable, over a limit, a syntax error, empty, not a
// mapping) is an error; otherwise every unknown key, duplicate key, value of
// the wrong type and secret is in the errs of the result.
func decode(name string) (*decoded, error) {
	var f File
	d, err := decodeInto(name, agentDocument, &f)
	if err != nil {
		return nil, err
	}
	d.f = &f
	return d, nil
}

// decodeInto is decode for any kind of file: it decodes the file's one
// document into v, a pointer to a struct of the kinds the agent file's spec
// uses. The result's f is nil.
func decodeInto(name string, doc *document, v any) (*decoded, error) {
	src, err := readSource(name, doc)
	if err != nil {
		return nil, err
	}
	tks := lexer.Tokenize(string(src))
	if empty(tks) {
		return nil, &Error{File: name, Msg: fmt.Sprintf("the %s is empty (nothing but blank lines and comments): %s", doc.noun, doc.shape)}
	}
	if err := checkTokenDepth(name, tks, doc); err != nil {
		return nil, err
	}
	tree, err := parser.Parse(tks, 0, parser.AllowDuplicateMapKey())
	if err != nil {
		return nil, yamlError(name, err)
	}
	body, err := documentBody(name, tree, doc)
	if err != nil {
		return nil, err
	}
	sh, err := checkShape(name, body, doc)
	if err != nil {
		return nil, err
	}
	loc := &locator{file: name, ast: tree}
	val := &validator{loc: loc}
	val.scanSecrets(body)
	if _, ok := mappingPairs(body); !ok {
		line, col, _ := nodePosition(body)
		errs := append(val.errs, &Error{File: name, Line: line, Column: col, Msg: "expected a mapping of " + doc.fields})
		return nil, errs.err()
	}
	d := &fieldDecoder{file: name, doc: doc, shape: sh}
	d.value(body, reflect.ValueOf(v).Elem(), nil)
	return &decoded{loc: loc, errs: append(val.errs, d.errs...), failed: d.failed, secret: len(val.errs) > 0}, nil
}

// empty reports whether a file holds no YAML: only comments, or at most a
// document marker.
func empty(tks token.Tokens) bool {
	for _, tk := range tks {
		switch tk.Type {
		case token.CommentType, token.DocumentHeaderType, token.DocumentEndType:
		default:
			return false
		}
	}
	return true
}

// documentBody is the body of the file's one document.
func documentBody(name string, tree *ast.File, doc *document) (ast.Node, error) {
	if len(tree.Docs) > 1 {
		line, col := 1, 1
		if tk := tree.Docs[1].Start; tk != nil {
			line, col = tk.Position.Line, tk.Position.Column
		}
		return nil, &Error{File: name, Line: line, Column: col,
			Msg: fmt.Sprintf("the file holds %d YAML documents (a line --- starts another): %s is one mapping", len(tree.Docs), doc.article())}
	}
	if len(tree.Docs) == 0 || tree.Docs[0].Body == nil {
		return nil, &Error{File: name, Msg: fmt.Sprintf("the %s is empty: %s", doc.noun, doc.shape)}
	}
	return tree.Docs[0].Body, nil
}

// yamlError turns a go-yaml syntax error into an *Error with its position.
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
	return e
}
