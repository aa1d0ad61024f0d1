package agentfile

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

// fieldDecoder decodes a parsed agent file into a File one value at a time,
// so that every unknown key, duplicate key and value of the wrong type is
// reported in one pass, each at its position. go-yaml converts the scalars;
// the decoder walks the mappings and lists, resolving aliases through the
// shape's table.
type fieldDecoder struct {
	file  string
	doc   *document
	shape shape
	errs  ErrorList
	// failed are the paths whose value did not decode: the checks of the
	// decoded File skip them, since their value there is only a zero.
	failed []path
}

func (d *fieldDecoder) fail(n ast.Node, p path, format string, args ...any) {
	line, col, _ := nodePosition(n)
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Column: col, Field: p.String(), Msg: fmt.Sprintf(format, args...)})
}

func (d *fieldDecoder) typeError(n ast.Node, p path, want string) {
	d.fail(n, p, "expected a value of type %s, found %s", want, kindOf(n))
	d.failed = append(d.failed, p.at())
}

// resolve follows anchors and aliases to the value they stand for.
func (d *fieldDecoder) resolve(n ast.Node) ast.Node {
	for {
		switch x := n.(type) {
		case *ast.AnchorNode:
			n = x.Value
		case *ast.AliasNode:
			n = d.shape.aliases[x]
		case *ast.TagNode:
			if _, scalar := x.Value.(ast.ScalarNode); scalar {
				return n
			}
			n = x.Value
		default:
			return n
		}
	}
}

// value decodes n into v, found at p.
func (d *fieldDecoder) value(n ast.Node, v reflect.Value, p path) {
	n = d.resolve(n)
	if n == nil || kindOf(n) == "null" {
		v.SetZero()
		if v.Kind() == reflect.Pointer && v.Type().Elem().Kind() == reflect.Struct {
			v.Set(reflect.New(v.Type().Elem())) // "shell:" with no value: a shell with the defaults
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.value(n, v.Elem(), p)
	case reflect.Struct:
		d.structValue(n, v, p)
	case reflect.Map:
		d.mapValue(n, v, p)
	case reflect.Slice:
		d.sliceValue(n, v, p)
	case reflect.Interface:
		if x := d.anyValue(n, p); x != nil {
			v.Set(reflect.ValueOf(x))
		}
	default:
		d.scalar(n, v, p)
	}
}

func (d *fieldDecoder) structValue(n ast.Node, v reflect.Value, p path) {
	names, index := yamlFields(v.Type())
	d.mapping(n, p, func(key string, kn, vn ast.Node) {
		i, ok := index[key]
		if !ok {
			d.fail(kn, p.at(key), "%s", unknownField(key, p, names, d.doc))
			return
		}
		f := v.Field(i)
		f.SetZero()
		d.value(vn, f, p.at(key))
	})
}

func (d *fieldDecoder) mapValue(n ast.Node, v reflect.Value, p path) {
	if v.Type().Key().Kind() != reflect.String {
		panic("agentfile: a map in the agent file spec must have string keys")
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	d.mapping(n, p, func(key string, _, vn ast.Node) {
		e := reflect.New(v.Type().Elem()).Elem()
		d.value(vn, e, p.at(key))
		v.SetMapIndex(reflect.ValueOf(key).Convert(v.Type().Key()), e)
	})
}

func (d *fieldDecoder) sliceValue(n ast.Node, v reflect.Value, p path) {
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		d.typeError(n, p, "list")
		return
	}
	s := reflect.MakeSlice(v.Type(), len(seq.Values), len(seq.Values))
	q := p.at(0) // reused for each item: a path is copied when kept
	for i, item := range seq.Values {
		q[len(q)-1] = i
		d.value(item, s.Index(i), q)
	}
	v.Set(s)
}

// anyValue decodes n as plain data: map[string]any, []any, or a scalar.
func (d *fieldDecoder) anyValue(n ast.Node, p path) any {
	n = d.resolve(n)
	switch x := n.(type) {
	case nil:
		return nil
	case *ast.MappingNode, *ast.MappingValueNode:
		m := map[string]any{}
		d.mapping(n, p, func(key string, _, vn ast.Node) { m[key] = d.anyValue(vn, p.at(key)) })
		return m
	case *ast.SequenceNode:
		out := make([]any, len(x.Values))
		q := p.at(0) // reused for each item: a path is copied when kept
		for i, item := range x.Values {
			q[len(q)-1] = i
			out[i] = d.anyValue(item, q)
		}
		return out
	}
	if lit, ok := n.(*ast.LiteralNode); ok {
		return lit.Value.Value
	}
	if scalar, ok := n.(ast.ScalarNode); ok && n.Type() != ast.TagType {
		return scalar.GetValue()
	}
	var out any
	if err := yaml.NodeToValue(n, &out); err != nil {
		d.fail(n, p, "%s", yamlMessage(err))
		d.failed = append(d.failed, p.at())
	}
	return out
}

// scalar decodes a scalar node into a string, integer, number or boolean.
// A string takes any scalar as written; the others take only their own
// kind (an integer also serves as a number): 1.5 is not an integer, "3" is
// not a number. The values are those go-yaml's parser put in the nodes.
func (d *fieldDecoder) scalar(n ast.Node, v reflect.Value, p path) {
	want := scalarType(v.Kind())
	got := kindOf(n)
	ok := got == want || (want == "number" && got == "integer") || (v.Kind() == reflect.Bool && got == "boolean") ||
		(want == "string" && got != "mapping" && got != "list")
	if !ok {
		d.typeError(n, p, want)
		return
	}
	if _, tagged := n.(*ast.TagNode); tagged {
		ptr := reflect.New(v.Type())
		if err := yaml.NodeToValue(n, ptr.Interface(), yaml.Strict()); err != nil {
			d.fail(n, p, "%s", yamlMessage(err))
			d.failed = append(d.failed, p.at())
			return
		}
		v.Set(ptr.Elem())
		return
	}
	switch x := n.(type) {
	case *ast.StringNode:
		v.SetString(x.Value)
	case *ast.LiteralNode:
		v.SetString(x.Value.Value)
	case *ast.BoolNode:
		if v.Kind() == reflect.Bool {
			v.SetBool(x.Value)
			return
		}
		v.SetString(x.GetToken().Value)
	case *ast.IntegerNode:
		d.integer(x, v, p)
	case *ast.FloatNode:
		if v.Kind() == reflect.String {
			v.SetString(x.GetToken().Value)
			return
		}
		v.SetFloat(x.Value)
	default:
		v.SetString(n.GetToken().Value)
	}
}

// integer sets v, of an integer, number or string kind, from an integer
// node: out of v's range is an error.
func (d *fieldDecoder) integer(n *ast.IntegerNode, v reflect.Value, p path) {
	var i int64
	var u uint64
	neg := false
	switch x := n.Value.(type) {
	case int64:
		i, u, neg = x, uint64(x), x < 0
	case uint64:
		i, u = int64(x), x
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(n.GetToken().Value)
		return
	case reflect.Float32, reflect.Float64:
		if neg {
			v.SetFloat(float64(i))
		} else {
			v.SetFloat(float64(u))
		}
		return
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if !neg && !v.OverflowUint(u) {
			v.SetUint(u)
			return
		}
	default:
		if (neg || u <= 1<<63-1) && !v.OverflowInt(i) {
			v.SetInt(i)
			return
		}
	}
	d.fail(n, p, "the integer %s is out of range", n.GetToken().Value)
	d.failed = append(d.failed, p.at())
}

// mapping calls each for the key-value pairs of a mapping node: first those
// merged in by "<<" keys, then its own, so that its own keys win. A
// duplicate key is reported and skipped.
func (d *fieldDecoder) mapping(n ast.Node, p path, each func(key string, kn, vn ast.Node)) {
	pairs, ok := mappingPairs(d.resolve(n))
	if !ok {
		d.typeError(n, p, "mapping")
		return
	}
	for _, mv := range pairs {
		if mv.Key != nil && mv.Key.IsMergeKey() {
			d.merge(mv.Value, p, each)
		}
	}
	seen := map[string]ast.Node{}
	for _, mv := range pairs {
		if mv.Key == nil || mv.Key.IsMergeKey() {
			continue
		}
		key := keyText(mv.Key)
		if first, dup := seen[key]; dup {
			line, col, _ := nodePosition(first)
			d.fail(mv.Key, p.at(key), "mapping key %q already defined at %d:%d", key, line, col)
			continue
		}
		seen[key] = mv.Key
		each(key, mv.Key, mv.Value)
	}
}

// merge applies a "<<" value: a mapping, or a list of mappings.
func (d *fieldDecoder) merge(n ast.Node, p path, each func(key string, kn, vn ast.Node)) {
	n = d.resolve(n)
	if seq, ok := n.(*ast.SequenceNode); ok {
		for _, item := range seq.Values {
			d.mapping(item, p, each)
		}
		return
	}
	d.mapping(n, p, each)
}

func mappingPairs(n ast.Node) ([]*ast.MappingValueNode, bool) {
	switch m := n.(type) {
	case *ast.MappingNode:
		return m.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{m}, true
	}
	return nil, false
}

// keyText is a mapping key as text: a string key's value, else the key as
// written.
func keyText(k ast.MapKeyNode) string {
	var n ast.Node = k
	if mk, ok := k.(*ast.MappingKeyNode); ok && mk.Value != nil {
		n = mk.Value
	}
	if s, ok := n.(*ast.StringNode); ok {
		return s.Value
	}
	if tk := n.GetToken(); tk != nil {
		return tk.Value
	}
	return n.String()
}

// kindOf says what a node is, in agent-file words.
func kindOf(n ast.Node) string {
	switch x := n.(type) {
	case *ast.TagNode:
		switch x.Start.Value {
		case "!!str":
			return "string"
		case "!!int":
			return "integer"
		case "!!float":
			return "number"
		case "!!bool":
			return "boolean"
		case "!!null":
			return "null"
		}
		return kindOf(x.Value)
	case *ast.MappingNode, *ast.MappingValueNode:
		return "mapping"
	case *ast.SequenceNode:
		return "list"
	case *ast.StringNode, *ast.LiteralNode:
		return "string"
	case *ast.IntegerNode:
		return "integer"
	case *ast.FloatNode:
		return "number"
	case *ast.BoolNode:
		return "boolean"
	case *ast.NullNode:
		return "null"
	case *ast.InfinityNode:
		return "infinity"
	case *ast.NanNode:
		return "NaN"
	}
	return "a value of YAML type " + n.Type().String()
}

// scalarType is the agent-file word for a Go scalar kind.
func scalarType(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean (true or false)"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	}
	panic("agentfile: unsupported kind in the agent file spec: " + k.String())
}

// yamlFields lists the yaml keys of a struct type, in declaration order,
// and the field index of each.
func yamlFields(t reflect.Type) ([]string, map[string]int) {
	names := make([]string, 0, t.NumField())
	index := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		names = append(names, name)
		index[name] = i
	}
	return names, index
}

// unknownField says that key is not one of names, the keys of the mapping at
// p, with the closest one when it looks like a typo.
func unknownField(key string, p path, names []string, doc *document) string {
	where := "the top level"
	if len(p) > 0 {
		where = p.String()
	}
	msg := fmt.Sprintf("unknown field %q", key)
	if near := closest(key, names); near != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", near)
	}
	return msg + fmt.Sprintf(": the keys of %s are %s (%s)", where, strings.Join(names, ", "), doc.reference)
}

// closest is the name within a small edit distance of key, or "".
func closest(key string, names []string) string {
	best, bestDist := "", len(key)/3+2
	for _, n := range names {
		if d := editDistance(strings.ToLower(key), n); d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// yamlMessage is a go-yaml error's message without its source excerpt.
func yamlMessage(err error) string {
	var ye yaml.Error
	if errors.As(err, &ye) {
		return ye.GetMessage()
	}
	return err.Error()
}
