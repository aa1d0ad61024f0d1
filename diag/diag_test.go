package diag_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/polyloop/polyloop/diag"
)

type panicky struct{}

func (panicky) Error() string { panic("boom") }

type loop struct{ next error }

func (l *loop) Error() string { return "loop" }
func (l *loop) Unwrap() error { return l.next }

type fielded struct{}

func (fielded) Error() string { return "rate limited" }
func (fielded) DiagFields() map[string]string {
	return map[string]string{"http_status": "429", "provider_code": "rate_limit"}
}

func TestFrom(t *testing.T) {
	if diag.From(nil) != nil {
		t.Fatal("nil error described")
	}
	d := diag.From(fmt.Errorf("call: %w", fielded{}))
	if d.Type != "*fmt.wrapError" || len(d.Causes) != 1 || d.Causes[0].Fields["http_status"] != "429" {
		t.Fatalf("%+v", d)
	}
	if !d.HasType("diag_test.fielded") {
		t.Fatal("HasType missed the cause")
	}
}

func TestPanickingErrorMethod(t *testing.T) {
	d := diag.From(fmt.Errorf("wrap: %w", panicky{}))
	if d == nil || !strings.Contains(d.Causes[0].Message, "panicked") {
		t.Fatalf("%+v", d)
	}
}

func TestCycleAndDepth(t *testing.T) {
	a := &loop{}
	b := &loop{next: a}
	a.next = b
	d := diag.From(a)
	if d == nil || !truncatedSomewhere(*d) {
		t.Fatalf("cycle not cut: %+v", d)
	}
	var deep error = errors.New("root")
	for i := 0; i < 100; i++ {
		deep = fmt.Errorf("layer %d: %w", i, deep)
	}
	d = diag.FromWith(deep, diag.Options{MaxDepth: 5})
	if depth(*d) > 5 || !truncatedSomewhere(*d) {
		t.Fatalf("depth %d", depth(*d))
	}
}

func TestJoinedAndBudget(t *testing.T) {
	j := errors.Join(errors.New("first"), errors.New("second"))
	d := diag.From(j)
	if len(d.Causes) != 2 || d.Causes[1].Message != "second" {
		t.Fatalf("%+v", d)
	}
	big := errors.New(strings.Repeat("é", 10000))
	d = diag.FromWith(fmt.Errorf("x: %w", big), diag.Options{Budget: 256})
	if size(*d) > 256 || !truncatedSomewhere(*d) {
		t.Fatalf("budget exceeded: %d", size(*d))
	}
	if !strings.HasPrefix(d.Message, "x: é") || !validUTF8(*d) {
		t.Fatal("cut in the middle of a rune")
	}
}

func depth(d diag.Diagnostic) int {
	m := 0
	for _, c := range d.Causes {
		m = max(m, depth(c))
	}
	return m + 1
}

func size(d diag.Diagnostic) int {
	n := len(d.Type) + len(d.Message)
	for k, v := range d.Fields {
		n += len(k) + len(v)
	}
	for _, c := range d.Causes {
		n += size(c)
	}
	return n
}

func truncatedSomewhere(d diag.Diagnostic) bool {
	if d.Truncated {
		return true
	}
	for _, c := range d.Causes {
		if truncatedSomewhere(c) {
			return true
		}
	}
	return false
}

func validUTF8(d diag.Diagnostic) bool {
	return utf8.ValidString(d.Message)
}

type genericErr[T any] struct{}

func (genericErr[T]) Error() string    { return "generic" }
func (genericErr[T]) DiagType() string { return "*client.APIError" }

func TestDiagType(t *testing.T) {
	d := diag.From(fmt.Errorf("call: %w", genericErr[int]{}))
	if d.Causes[0].Type != "*client.APIError" {
		t.Fatalf("type %q", d.Causes[0].Type)
	}
}

// A comparable struct error holding an unhashable value must not panic.
type holder struct{ v any }

func (h holder) Error() string { return "holder" }
func (h holder) Unwrap() error { return errors.New("inner") }

func TestUnhashableValueError(t *testing.T) {
	d := diag.From(fmt.Errorf("x: %w", holder{v: []int{1}}))
	if d.Causes[0].Type != "diag_test.holder" || len(d.Causes[0].Causes) != 1 {
		t.Fatalf("%+v", d)
	}
}
