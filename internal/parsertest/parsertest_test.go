package parsertest

import (
	"errors"
	"flag"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
)

// recorder is a testing.TB that keeps what is reported to it; Fatalf ends
// the goroutine, as testing's does.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// run calls f with a recorder in a goroutine of its own and returns what
// was reported.
func run(f func(tb testing.TB)) []string {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.errs
}

// parserFunc is a DecisionParser made of a function.
type parserFunc func(polyloop.ModelReply) polyloop.Decision

func (f parserFunc) Parse(r polyloop.ModelReply) polyloop.Decision { return f(r) }

func anyAction(polyloop.Action, int, polyloop.ModelReply) error { return nil }

func TestParseCatchesBrokenParsers(t *testing.T) {
	t.Parallel()
	calls := 0
	tests := []struct {
		name   string
		parser parserFunc
		check  ActionCheck
		want   string
	}{
		{"empty feedback", func(polyloop.ModelReply) polyloop.Decision { return polyloop.Invalid{} }, anyAction, "empty feedback"},
		{"pointer decision", func(polyloop.ModelReply) polyloop.Decision { return &polyloop.Final{} }, anyAction, "want Act, Final or Invalid"},
		{"not deterministic", func(polyloop.ModelReply) polyloop.Decision {
			calls++
			return polyloop.Final{Answer: fmt.Sprint(calls)}
		}, anyAction, "not deterministic"},
		{"modifies the reply", func(r polyloop.ModelReply) polyloop.Decision {
			r.ToolCalls[0].Args[0] = ' '
			return polyloop.Final{}
		}, anyAction, "modified the reply"},
		{"action refused", func(polyloop.ModelReply) polyloop.Decision {
			return polyloop.ActOne(polyloop.Action{Tool: "t"})
		}, func(polyloop.Action, int, polyloop.ModelReply) error { return errors.New("no args") }, "no args"},
		{"second action of a batch refused", func(polyloop.ModelReply) polyloop.Decision {
			return polyloop.Act{Actions: []polyloop.Action{{Tool: "t", Args: []byte(`{}`)}, {Tool: "u"}}}
		}, func(a polyloop.Action, i int, _ polyloop.ModelReply) error {
			if a.Args == nil {
				return fmt.Errorf("action %d has no args", i)
			}
			return nil
		}, "action 1 has no args"},
		{"act without actions", func(polyloop.ModelReply) polyloop.Decision { return polyloop.Act{} }, anyAction, "without actions"},
	}
	for _, tt := range tests {
		// A fresh reply each time: one parser modifies it.
		r := polyloop.ModelReply{Text: "x", ToolCalls: []polyloop.ToolCall{{Name: "t", Args: []byte(`{"a":1}`)}}}
		errs := run(func(tb testing.TB) { Parse(tb, tt.parser, r, tt.check) })
		if len(errs) != 1 || !strings.Contains(errs[0], tt.want) {
			t.Errorf("%s: reported %q, want one error containing %q", tt.name, errs, tt.want)
		}
	}
}

func TestParseAcceptsGoodParser(t *testing.T) {
	t.Parallel()
	p := parserFunc(func(r polyloop.ModelReply) polyloop.Decision { return polyloop.Final{Answer: r.Text} })
	if d := Parse(t, p, polyloop.ModelReply{Text: "4"}, anyAction); d != (polyloop.Final{Answer: "4"}) {
		t.Fatalf("Parse = %#v, want the parser's decision", d)
	}
}

func TestToolAction(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		action polyloop.Action
		ok     bool
	}{
		{polyloop.Action{Tool: "t", Args: []byte(`{}`)}, true},
		{polyloop.Action{Tool: "t", Args: []byte(`{"a":[1]}`)}, true},
		{polyloop.Action{Args: []byte(`{}`)}, false},
		{polyloop.Action{Tool: "t"}, false},
		{polyloop.Action{Tool: "t", Args: []byte(`null`)}, false},
		{polyloop.Action{Tool: "t", Args: []byte(`[]`)}, false},
	} {
		if err := ToolAction(tt.action); (err == nil) != tt.ok {
			t.Errorf("ToolAction(%s %s) = %v, want ok %v", tt.action.Tool, tt.action.Args, err, tt.ok)
		}
	}
}

func TestExpect(t *testing.T) {
	t.Parallel()
	act := polyloop.ActOne(polyloop.Action{Tool: "t", Args: []byte(`{"a":1}`)})
	inv := polyloop.Invalid{Feedback: "no tool call here"}
	tests := []struct {
		name      string
		d, want   polyloop.Decision
		contains  []string
		wantError string // "" for none
	}{
		{"equal act", act, polyloop.ActOne(polyloop.Action{Tool: "t", Args: []byte(`{"a":1}`)}), nil, ""},
		{"other act", act, polyloop.ActOne(polyloop.Action{Tool: "u", Args: []byte(`{"a":1}`)}), nil, `{"a":1}`},
		{"act for final", act, polyloop.Final{}, nil, "want polyloop.Final"},
		{"feedback holds", inv, nil, []string{"no tool", "here"}, ""},
		{"feedback lacks", inv, nil, []string{"several"}, `does not contain "several"`},
		{"not invalid", act, nil, []string{"x"}, "want Invalid"},
	}
	for _, tt := range tests {
		errs := run(func(tb testing.TB) { Expect(tb, tt.d, tt.want, tt.contains) })
		switch {
		case tt.wantError == "" && len(errs) > 0:
			t.Errorf("%s: reported %q, want nothing", tt.name, errs)
		case tt.wantError != "" && (len(errs) != 1 || !strings.Contains(errs[0], tt.wantError)):
			t.Errorf("%s: reported %q, want one error containing %q", tt.name, errs, tt.wantError)
		}
	}
}

// TestRewriteFlag checks that a test binary of the parsers, which does not
// import datadriven, has the -rewrite flag of package golden.
func TestRewriteFlag(t *testing.T) {
	t.Parallel()
	f := flag.Lookup("rewrite")
	if f == nil || !strings.Contains(f.Usage, "golden files") {
		t.Fatalf("no -rewrite flag of package golden: %+v", f)
	}
}
