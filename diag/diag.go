// Package diag turns any error into a bounded, plain description that can be
// stored in a record or sent in an event.
//
// It only describes. It never decides whether an error is a cancellation,
// whether a failure may be received by business code, or whether to retry:
// those decisions come from the boundary where the error happened, not from
// what the error looks like.
//
// From is safe against error values that misbehave: an Error method that
// panics, cause chains that form a cycle, trees of joined errors that are very
// deep or very wide. The result never exceeds the byte budget given in
// Options (DefaultBudget when zero).
package diag

import (
	"fmt"
	"reflect"
	"sort"
	"unicode/utf8"
)

// Diagnostic is a plain description of an error. It holds no reference to the
// error it describes.
type Diagnostic struct {
	// Type is the Go type of the error value, e.g. "*net.OpError".
	Type string `json:"type"`
	// Message is the error's text, cut to fit the budget.
	Message string `json:"message"`
	// Fields are the known fields an error exposes through Fielder (HTTP
	// status, provider error code, request id...).
	Fields map[string]string `json:"fields,omitempty"`
	// Causes are the wrapped errors: one for errors.Unwrap, several for
	// errors.Join and other multi-errors.
	Causes []Diagnostic `json:"causes,omitempty"`
	// Truncated reports that something was left out to stay within the
	// depth or byte budget, or that a cycle was cut.
	Truncated bool `json:"truncated,omitempty"`
}

// Fielder is implemented by errors that carry structured fields worth keeping
// (for example an HTTP status or a provider's error code). The keys should be
// short snake_case words such as "http_status", "provider_code", "request_id".
// Values must never hold secrets.
type Fielder interface {
	DiagFields() map[string]string
}

// Typer is implemented by errors whose Go type name is not the name a reader
// should see (generic types, say): DiagType returns it, e.g.
// "*openaimodel.APIError".
type Typer interface {
	DiagType() string
}

// Options bound a description.
type Options struct {
	// MaxDepth bounds how deep the cause chain is followed (DefaultMaxDepth
	// when zero).
	MaxDepth int
	// Budget bounds the total bytes of messages, types and fields
	// (DefaultBudget when zero).
	Budget int
}

// Defaults used when Options leave a bound at zero.
const (
	DefaultMaxDepth = 8
	DefaultBudget   = 4096
	maxChildren     = 16
)

// From describes err with the default bounds. It returns nil for a nil error.
func From(err error) *Diagnostic { return FromWith(err, Options{}) }

// FromWith describes err within the given bounds. It returns nil for a nil
// error.
func FromWith(err error, opts Options) *Diagnostic {
	if err == nil {
		return nil
	}
	if opts.MaxDepth <= 0 {
		opts.MaxDepth = DefaultMaxDepth
	}
	if opts.Budget <= 0 {
		opts.Budget = DefaultBudget
	}
	w := walker{budget: opts.Budget, maxDepth: opts.MaxDepth, seen: map[any]bool{}}
	d := w.describe(err, 0)
	return &d
}

type walker struct {
	budget   int
	maxDepth int
	seen     map[any]bool
}

func (w *walker) take(s string) (string, bool) {
	if w.budget <= 0 {
		return "", len(s) > 0
	}
	if len(s) <= w.budget {
		w.budget -= len(s)
		return s, false
	}
	cut := w.budget
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	w.budget = 0
	return s[:cut], true
}

func (w *walker) describe(err error, depth int) Diagnostic {
	var d Diagnostic
	var cut bool
	d.Type, cut = w.take(typeName(err))
	d.Truncated = d.Truncated || cut
	d.Message, cut = w.take(safeMessage(err))
	d.Truncated = d.Truncated || cut
	if f := safeFields(err); len(f) > 0 {
		keys := make([]string, 0, len(f))
		for k := range f {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v, c := w.take(f[k])
			kk, c2 := w.take(k)
			if c || c2 || kk == "" {
				d.Truncated = true
				if kk == "" {
					break
				}
			}
			if d.Fields == nil {
				d.Fields = map[string]string{}
			}
			d.Fields[kk] = v
		}
	}
	if key, ok := identity(err); ok {
		if w.seen[key] {
			d.Truncated = true
			return d
		}
		w.seen[key] = true
	}
	causes := safeUnwrap(err)
	if len(causes) == 0 {
		return d
	}
	if depth+1 >= w.maxDepth || w.budget <= 0 {
		d.Truncated = true
		return d
	}
	if len(causes) > maxChildren {
		causes = causes[:maxChildren]
		d.Truncated = true
	}
	for _, c := range causes {
		if c == nil {
			continue
		}
		if w.budget <= 0 {
			d.Truncated = true
			break
		}
		d.Causes = append(d.Causes, w.describe(c, depth+1))
	}
	return d
}

func typeName(err error) (name string) {
	if t, ok := err.(Typer); ok {
		defer func() {
			if recover() != nil {
				name = fmt.Sprintf("%T", err)
			}
		}()
		return t.DiagType()
	}
	return fmt.Sprintf("%T", err)
}

// identity returns a key for cycle detection: the pointer of pointer-shaped
// errors. A cycle can only pass through pointers; value errors are bounded by
// the depth limit. (Using a value as a map key could panic: a comparable
// struct may hold an interface with an unhashable value.)
func identity(err error) (any, bool) {
	v := reflect.ValueOf(err)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer, reflect.Slice:
		return v.Pointer(), true
	}
	return nil, false
}

func safeMessage(err error) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprintf("<Error method panicked: %v>", r)
		}
	}()
	return err.Error()
}

func safeFields(err error) (f map[string]string) {
	defer func() {
		if recover() != nil {
			f = map[string]string{"diag_fields": "<DiagFields panicked>"}
		}
	}()
	if fe, ok := err.(Fielder); ok {
		return fe.DiagFields()
	}
	return nil
}

func safeUnwrap(err error) (out []error) {
	defer func() {
		if recover() != nil {
			out = nil
		}
	}()
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		return u.Unwrap()
	case interface{ Unwrap() error }:
		if c := u.Unwrap(); c != nil {
			return []error{c}
		}
	}
	return nil
}

// HasType reports whether a diagnostic was made from an error of the given type
// name anywhere in its cause tree. It is meant for display and statistics
// only, never for deciding eligibility.
func (d *Diagnostic) HasType(name string) bool {
	if d == nil {
		return false
	}
	if d.Type == name {
		return true
	}
	for i := range d.Causes {
		if d.Causes[i].HasType(name) {
			return true
		}
	}
	return false
}

// String renders the diagnostic on one line: "type: message".
func (d *Diagnostic) String() string {
	if d == nil {
		return ""
	}
	return d.Type + ": " + d.Message
}
