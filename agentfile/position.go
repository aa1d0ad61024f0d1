package agentfile

import (
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

// path is the location of a value in the agent file: keys (string) and
// sequence indexes (int), from the document's root.
type path []any

// at extends p by more keys or indexes.
func (p path) at(parts ...any) path {
	out := make(path, 0, len(p)+len(parts))
	return append(append(out, p...), parts...)
}

// within reports whether p is q or under it.
func (p path) within(q path) bool {
	if len(p) < len(q) {
		return false
	}
	for i := range q {
		if p[i] != q[i] {
			return false
		}
	}
	return true
}

// String renders p as "tools.mcp[1].replay.read_file".
func (p path) String() string {
	var b strings.Builder
	for _, part := range p {
		switch v := part.(type) {
		case int:
			b.WriteString("[" + strconv.Itoa(v) + "]")
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(v)
		}
	}
	return b.String()
}

// yamlPath is p as a go-yaml path.
func (p path) yamlPath() *yaml.Path {
	b := (&yaml.PathBuilder{}).Root()
	for _, part := range p {
		switch v := part.(type) {
		case int:
			b = b.Index(uint(v))
		case string:
			b = b.Child(v)
		}
	}
	return b.Build()
}

// locator finds where a path is in the parsed file.
type locator struct {
	file string
	ast  *ast.File
}

// position returns the line and column of the value at p or, when p is
// absent (a missing required field), of the nearest enclosing value that is
// present; 1:1 when nothing is.
func (l *locator) position(p path) (line, col int) {
	for n := len(p); n > 0; n-- {
		node, err := p[:n].yamlPath().FilterFile(l.ast)
		if err != nil || node == nil {
			continue
		}
		if line, col, ok := nodePosition(node); ok {
			return line, col
		}
	}
	return 1, 1
}

// nodePosition is where a node starts: for a mapping, its first key (go-yaml
// puts a mapping's token on its first colon).
func nodePosition(node ast.Node) (line, col int, ok bool) {
	switch n := node.(type) {
	case *ast.MappingNode:
		if len(n.Values) > 0 && n.Values[0].Key != nil {
			node = n.Values[0].Key
		}
	case *ast.MappingValueNode:
		if n.Key != nil {
			node = n.Key
		}
	}
	tk := node.GetToken()
	if tk == nil || tk.Position == nil {
		return 0, 0, false
	}
	return tk.Position.Line, tk.Position.Column, true
}

// errorAt builds an Error for the value at p.
func (l *locator) errorAt(p path, msg string) *Error {
	line, col := l.position(p)
	return &Error{File: l.file, Line: line, Column: col, Field: p.String(), Msg: msg}
}
