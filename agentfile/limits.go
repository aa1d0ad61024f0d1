package agentfile

import (
	"fmt"
	"io"
	"os"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// Limits on an agent file. An agent file is configuration written by people:
// these bounds are far above what one needs, and they keep a hostile or
// broken file from exhausting memory or time before it is refused. A file
// over a limit is refused with an error matching ErrLimit (and ErrInvalid),
// at the position where the limit was crossed.
const (
	// MaxFileSize is the largest agent file read, in bytes. It bounds the
	// memory the YAML parser takes (a few hundred bytes per byte of input in
	// the worst case; see docs/agent-file.md).
	MaxFileSize = 512 << 10
	// MaxDepth is how deeply mappings and lists may nest, counting the
	// levels an alias brings in. It is checked on the tokens before the file
	// is parsed, since the parser's cost grows with the square of the depth.
	MaxDepth = 100
	// MaxAliases is how many aliases (*name) a file may use.
	MaxAliases = 1000
	// MaxAliasExpansion bounds what aliases may add to the document: the
	// nodes and scalar bytes the file would hold with every alias replaced by
	// its anchor's value, over those it holds as written.
	MaxAliasExpansion = 1 << 20
)

// readSource reads at most MaxFileSize bytes of the file.
func readSource(name string, doc *document) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, &Error{File: name, Msg: fmt.Sprintf("cannot read the %s: %v", doc.noun, err)}
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, &Error{File: name, Msg: fmt.Sprintf("cannot read the %s: %v", doc.noun, err)}
	}
	if len(src) > MaxFileSize {
		return nil, &Error{File: name, Msg: fmt.Sprintf("the %s is larger than %d bytes (%d KiB), "+
			"the most %s may hold: %s", doc.noun, MaxFileSize, MaxFileSize>>10, doc.article(), doc.tooLarge), Err: ErrLimit}
	}
	return src, nil
}

// checkTokenDepth refuses a token stream that nests deeper than MaxDepth:
// flow collections by their brackets, block collections by the columns of
// their keys and "-" entries. It may count a level less than the parser
// (a list at its parent key's column), never more.
func checkTokenDepth(name string, tks token.Tokens, doc *document) error {
	flow := 0
	var block []int // the columns of the open block collections
	for _, tk := range tks {
		switch tk.Type {
		case token.SequenceStartType, token.MappingStartType:
			flow++
		case token.SequenceEndType, token.MappingEndType:
			flow--
		case token.DocumentHeaderType:
			flow, block = 0, block[:0]
		case token.SequenceEntryType, token.MappingValueType:
			if flow > 0 {
				continue
			}
			col := blockColumn(tk)
			for len(block) > 0 && block[len(block)-1] >= col {
				block = block[:len(block)-1]
			}
			block = append(block, col)
		default:
			continue
		}
		if flow+len(block) > MaxDepth {
			return depthError(name, tk.Position.Line, tk.Position.Column, doc)
		}
	}
	return nil
}

// blockColumn is the column where a block entry starts: a "-" entry's own,
// a mapping value's key's.
func blockColumn(tk *token.Token) int {
	if tk.Type == token.MappingValueType && tk.Prev != nil && tk.Prev.Position.Line == tk.Position.Line {
		return tk.Prev.Position.Column
	}
	return tk.Position.Column
}

func depthError(name string, line, col int, doc *document) *Error {
	return &Error{File: name, Line: line, Column: col, Err: ErrLimit,
		Msg: fmt.Sprintf("mappings and lists nest deeper than %d levels here, the most %s may nest", MaxDepth, doc.article())}
}

// shape is what the walk over the parsed document found: the value each
// alias stands for (so that decoding need not look anchors up again).
type shape struct {
	aliases map[*ast.AliasNode]ast.Node
}

// measured is the size of a node with its aliases expanded: nodes plus
// scalar bytes (saturating at MaxAliasExpansion+1 past the written size),
// and the levels of nesting it holds.
type measured struct {
	size   int64
	height int
}

// shapeWalker checks the parsed document against the limits: the depth with
// aliases expanded, the number of aliases and what they add.
type shapeWalker struct {
	name    string
	doc     *document
	anchors map[string]anchorDef
	shape   shape
	count   int   // aliases seen
	added   int64 // size the aliases add
	err     *Error
}

type anchorDef struct {
	value ast.Node
	m     measured
}

// checkShape walks the document once, in order (an alias refers to the
// latest anchor of its name before it), and returns the aliases' targets,
// or the first limit crossed.
func checkShape(name string, body ast.Node, doc *document) (shape, error) {
	w := &shapeWalker{name: name, doc: doc, anchors: map[string]anchorDef{}, shape: shape{aliases: map[*ast.AliasNode]ast.Node{}}}
	w.walk(body, 1)
	if w.err != nil {
		return shape{}, w.err
	}
	return w.shape, nil
}

func (w *shapeWalker) fail(n ast.Node, format string, args ...any) measured {
	if w.err == nil {
		line, col, _ := nodePosition(n)
		w.err = &Error{File: w.name, Line: line, Column: col, Msg: fmt.Sprintf(format, args...), Err: ErrLimit}
	}
	return measured{}
}

// walk measures n, found at nesting level depth.
func (w *shapeWalker) walk(n ast.Node, depth int) measured {
	if w.err != nil || n == nil {
		return measured{}
	}
	switch n := n.(type) {
	case *ast.MappingNode:
		return w.children(n, depth, len(n.Values), func(i int) ast.Node { return n.Values[i] })
	case *ast.MappingValueNode:
		k := w.walk(n.Key, depth)
		v := w.walk(n.Value, depth)
		return measured{size: k.size + v.size, height: max(k.height, v.height)}
	case *ast.SequenceNode:
		return w.children(n, depth, len(n.Values), func(i int) ast.Node { return n.Values[i] })
	case *ast.AnchorNode:
		m := w.walk(n.Value, depth)
		w.anchors[n.Name.GetToken().Value] = anchorDef{value: n.Value, m: m}
		return m
	case *ast.AliasNode:
		return w.alias(n, depth)
	case *ast.TagNode:
		return w.walk(n.Value, depth)
	case *ast.MappingKeyNode:
		return w.walk(n.Value, depth)
	case *ast.LiteralNode:
		if n.Value != nil {
			return measured{size: 1 + int64(len(n.Value.Value))}
		}
	}
	if tk := n.GetToken(); tk != nil {
		return measured{size: 1 + int64(len(tk.Value))}
	}
	return measured{size: 1}
}

func (w *shapeWalker) children(n ast.Node, depth, count int, child func(int) ast.Node) measured {
	if depth > MaxDepth {
		line, col, _ := nodePosition(n)
		w.err = depthError(w.name, line, col, w.doc)
		return measured{}
	}
	total := measured{size: 1, height: 1}
	for i := 0; i < count; i++ {
		m := w.walk(child(i), depth+1)
		total.size = min(total.size+m.size, MaxFileSize+MaxAliasExpansion+1)
		total.height = max(total.height, m.height+1)
	}
	return total
}

func (w *shapeWalker) alias(n *ast.AliasNode, depth int) measured {
	name := n.Value.GetToken().Value
	def, ok := w.anchors[name]
	if !ok {
		return w.fail(n, "alias *%s refers to no anchor &%s defined before it", name, name)
	}
	w.shape.aliases[n] = def.value
	w.count++
	if w.count > MaxAliases {
		return w.fail(n, "more than %d aliases, the most %s may use", MaxAliases, w.doc.article())
	}
	if depth+def.m.height-1 > MaxDepth {
		return w.fail(n, "alias *%s nests its anchor's value deeper than %d levels, the most %s may nest", name, MaxDepth, w.doc.article())
	}
	w.added += def.m.size
	if w.added > MaxAliasExpansion {
		return w.fail(n, "alias *%s would take the document past the %d bytes that aliases may add "+
			"(an alias bomb, or anchors used too much)", name, MaxAliasExpansion)
	}
	return def.m
}
