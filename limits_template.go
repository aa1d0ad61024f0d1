package polyloop

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	tt "text/template"
	"text/template/parse"
	"time"
)

// templateLimits are the bounds of every template rendering.
var templateLimits = templateBounds{Bytes: MaxTemplateBytes, Bodies: MaxTemplateBodies, Time: MaxTemplateTime}

// templateBounds bound one rendering.
type templateBounds struct {
	// Bytes bounds the text written and every string a function builds.
	Bytes int
	// Bodies bounds the bodies run: range iterations, if and with
	// branches, templates called.
	Bodies int
	// Time bounds the rendering's duration, checked at each body and each
	// string built.
	Time time.Duration
}

// ErrTemplateLimit marks a template rendering stopped at
// MaxTemplateBytes, MaxTemplateBodies or MaxTemplateTime.
var ErrTemplateLimit = errors.New("polyloop: the template went beyond its bounds")

// templateLimitError says which bound stopped a rendering; errors.Is(err,
// ErrTemplateLimit).
type templateLimitError struct{ msg string }

func (e *templateLimitError) Error() string        { return ErrTemplateLimit.Error() + ": " + e.msg }
func (e *templateLimitError) Is(target error) bool { return target == ErrTemplateLimit }

func templateBeyond(format string, a ...any) error {
	return &templateLimitError{msg: fmt.Sprintf(format, a...)}
}

// templateTick is the function every body starts with.
const templateTick = "polyloopBound"

// templateBudget is one rendering's state.
type templateBudget struct {
	lim      templateBounds
	bodies   int
	deadline time.Time
}

func (b *templateBudget) tick() (string, error) {
	b.bodies++
	if b.bodies > b.lim.Bodies {
		return "", templateBeyond("it ran more than %d bodies (range iterations, branches, templates)", b.lim.Bodies)
	}
	return "", b.inTime()
}

func (b *templateBudget) inTime() error {
	if time.Now().After(b.deadline) {
		return templateBeyond("it ran longer than %v", b.lim.Time)
	}
	return nil
}

// text checks a string a function built.
func (b *templateBudget) text(s string) (string, error) {
	if len(s) > b.lim.Bytes {
		return "", templateBeyond("it built a string of more than %d bytes", b.lim.Bytes)
	}
	return s, b.inTime()
}

// funcs are the instrumented functions, bound to b (nil: placeholders for
// parsing).
func (b *templateBudget) funcs() tt.FuncMap {
	str := func(f func(...any) string) func(...any) (string, error) {
		return func(a ...any) (string, error) { return b.text(f(a...)) }
	}
	return tt.FuncMap{
		templateTick: b.tick,
		"print":      str(fmt.Sprint),
		"println":    str(fmt.Sprintln),
		"printf":     func(format string, a ...any) (string, error) { return b.text(fmt.Sprintf(format, a...)) },
		"html":       str(func(a ...any) string { return tt.HTMLEscapeString(evalArgs(a)) }),
		"js":         str(func(a ...any) string { return tt.JSEscapeString(evalArgs(a)) }),
		"urlquery":   str(func(a ...any) string { return url.QueryEscape(evalArgs(a)) }),
	}
}

// evalArgs formats the arguments of html, js and urlquery as
// text/template's own do.
func evalArgs(a []any) string {
	if len(a) == 1 {
		if s, ok := a[0].(string); ok {
			return s
		}
	}
	return fmt.Sprint(a...)
}

// parseBoundedTemplate parses text as the template name (with the options,
// such as "missingkey=error") and instruments it: every body starts with a
// call that counts it and checks the clock, and the built-in functions
// that build strings (print, printf, println, html, js, urlquery) refuse a
// result larger than the byte bound. text/template has no bound of its
// own: a 30-byte template can loop for ever without writing a byte, or
// double a string until memory runs out.
func parseBoundedTemplate(name, text string, options ...string) (*tt.Template, error) {
	t, err := tt.New(name).Option(options...).Funcs((&templateBudget{}).funcs()).Parse(text)
	if err != nil {
		return nil, err
	}
	call, err := tt.New("").Funcs((&templateBudget{}).funcs()).Parse("{{" + templateTick + "}}")
	if err != nil {
		return nil, err
	}
	node := call.Tree.Root.Nodes[0]
	for _, each := range t.Templates() {
		if each.Tree != nil {
			instrument(each.Tree.Root, node)
		}
	}
	return t, nil
}

// instrument puts node first in every body under n.
func instrument(n parse.Node, node parse.Node) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			instrument(c, node)
		}
		n.Nodes = append([]parse.Node{node}, n.Nodes...)
	case *parse.IfNode:
		instrument(n.List, node)
		instrument(n.ElseList, node)
	case *parse.RangeNode:
		instrument(n.List, node)
		instrument(n.ElseList, node)
	case *parse.WithNode:
		instrument(n.List, node)
		instrument(n.ElseList, node)
	}
}

// executeBounded renders t, parsed by parseBoundedTemplate, on data within
// lim. An error at a
// bound is ErrTemplateLimit's, saying which bound, without text/template's
// position (that of the instrumentation).
func executeBounded(t *tt.Template, data any, lim templateBounds) (string, error) {
	b := &templateBudget{lim: lim, deadline: time.Now().Add(lim.Time)}
	run, err := t.Clone()
	if err != nil {
		return "", err
	}
	w := &boundedWriter{max: lim.Bytes}
	if err := run.Funcs(b.funcs()).Execute(w, data); err != nil {
		var le *templateLimitError
		if errors.As(err, &le) {
			return "", le
		}
		return "", err
	}
	return w.b.String(), nil
}

// boundedWriter keeps at most max bytes and fails past them.
type boundedWriter struct {
	b   strings.Builder
	max int
}

func (w *boundedWriter) Write(p []byte) (int, error) {
	if w.b.Len()+len(p) > w.max {
		return 0, templateBeyond("it wrote more than %d bytes", w.max)
	}
	return w.b.Write(p)
}
