package polylooptest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// ParserHarness tells TestDecisionParser how to drive a DecisionParser.
// Only New is required.
type ParserHarness struct {
	// New returns a fresh parser. It is called once or more per subtest,
	// from a goroutine other than the test's.
	New func(t testing.TB) polyloop.DecisionParser
	// Corpus holds replies of the kind the parser is meant for (native tool
	// calls, JSON in text, fenced code...), each with the decision kind it
	// must give. They also seed the generated inputs. Empty: the Corpus
	// check is skipped; the other checks run on the kit's own inputs.
	Corpus []ParserCase
	// Seed seeds the generated inputs (1 when zero), so that a failure can
	// be reproduced.
	Seed uint64
	// Generated is the number of generated inputs (DefaultGenerated when
	// zero).
	Generated int
	// Skip names checks the implementation cannot honour, with the reason
	// logged when each is skipped. A name that is no check fails the suite.
	Skip map[string]string
	// Timeout is the watchdog of each subtest (DefaultTimeout when zero).
	Timeout time.Duration
}

// DefaultGenerated is the number of generated inputs per run of the suite.
const DefaultGenerated = 300

// ParserCase is one reply of a parser's corpus.
type ParserCase struct {
	Name  string
	Reply polyloop.ModelReply
	// Want is the kind of decision the reply must give; "" accepts any.
	Want polyloop.DecisionKind
}

// TestDecisionParser checks that the parsers made by h honour the
// DecisionParser contract. Run it with -race.
//
// Every input must give exactly one decision: a polyloop.Act, Final or
// Invalid value (not a pointer, not another type), an Act with an action
// (a tool or code, not both) whose Args are valid JSON, an Invalid with
// feedback. A panic is recovered by the kit and reported with the input.
//
// The checks (subtest names, usable as keys of h.Skip):
//   - Corpus: the harness's replies give the decisions they want.
//   - EdgeCases: empty replies, stray fences, empty and several tool calls,
//     arguments that are not JSON, and similar.
//   - Generated: garbage generated from h.Seed: random bytes, token soups
//     and mutations of the corpus.
//   - HugeInputs: megabyte texts and arguments, thousands of tool calls,
//     deep nesting.
//   - InvalidUTF8: invalid UTF-8 in the text, tool names and arguments.
//   - Deterministic: every input parsed twice, and by a fresh parser, gives
//     the same decision (resume parses stored replies again).
//   - ReplyNotModified: Parse leaves the reply as it was.
//   - Concurrent: parsing from several goroutines gives the sequential
//     decisions.
func TestDecisionParser(t *testing.T, h ParserHarness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("polylooptest: ParserHarness.New is required")
	}
	runSuite(t, "DecisionParser", h, newSettings(h.Timeout, 0, h.Skip), parserChecks)
}

var parserChecks = []check[ParserHarness]{
	{"Corpus", checkParserCorpus},
	{"EdgeCases", inputCheck(func(h ParserHarness) []ParserCase { return edgeCases() })},
	{"Generated", inputCheck(func(h ParserHarness) []ParserCase { return generated(h) })},
	{"HugeInputs", inputCheck(func(h ParserHarness) []ParserCase { return hugeInputs() })},
	{"InvalidUTF8", inputCheck(func(h ParserHarness) []ParserCase { return invalidUTF8() })},
	{"Deterministic", checkParserDeterministic},
	{"ReplyNotModified", checkParserReplyNotModified},
	{"Concurrent", checkParserConcurrent},
}

// allInputs is every input the kit has for a harness, huge ones aside.
func allInputs(h ParserHarness) []ParserCase {
	var in []ParserCase
	in = append(in, h.Corpus...)
	in = append(in, edgeCases()...)
	in = append(in, invalidUTF8()...)
	return append(in, generated(h)...)
}

// parse calls Parse, turning a panic into an error that names the input.
func parse(p polyloop.DecisionParser, c ParserCase) (d polyloop.Decision, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = broke(ruleNoPanic, "Parse panicked on input %s: %v\n%s", describeCase(c), r, debug.Stack())
		}
	}()
	return p.Parse(c.Reply), nil
}

// parseChecked parses c and checks that the decision is well formed.
func parseChecked(p polyloop.DecisionParser, c ParserCase) (polyloop.Decision, error) {
	d, err := parse(p, c)
	if err != nil {
		return nil, err
	}
	if err := wellFormed(d); err != nil {
		return d, within(err, "input %s", describeCase(c))
	}
	return d, nil
}

// wellFormed checks that d is exactly one of Act, Final, Invalid, and
// complete.
func wellFormed(d polyloop.Decision) error {
	switch v := d.(type) {
	case nil:
		return broke(ruleOneDecision, "Parse returned a nil Decision; every input must give Act, Final or Invalid")
	case polyloop.Act:
		if len(v.Actions) == 0 {
			return broke(ruleActHasActions, "Parse returned an Act without actions; an Act asks for at least one")
		}
		for i, a := range v.Actions {
			if err := wellFormedAction(a); err != nil {
				return within(err, "action %d of the Act", i)
			}
		}
		return nil
	case polyloop.Final:
		return nil
	case polyloop.Invalid:
		if strings.TrimSpace(v.Feedback) == "" {
			return broke(ruleInvalidFeedback, "Parse returned Invalid without feedback; the feedback must say what was wrong")
		}
		return nil
	}
	return broke(ruleOneDecision, "Parse returned a %T (kind %q); a Decision must be a polyloop.Act, polyloop.Final or polyloop.Invalid value", d, d.Kind())
}

func wellFormedAction(a polyloop.Action) error {
	switch {
	case a.Tool == "" && a.Code == "":
		return broke(ruleActHasActions, "Parse returned an Act with an empty action %s", cutJSON(a))
	case a.Tool != "" && a.Code != "":
		return broke(ruleActHasActions, "Parse returned an Act with both a tool %q and code; an action is one or the other", a.Tool)
	case len(a.Args) > 0 && !json.Valid(a.Args):
		return broke(ruleArgsAreJSON, "Parse returned an Act whose Args are not valid JSON: %s (the record holding it could not be encoded)", cut(a.Args))
	}
	return nil
}

func describeCase(c ParserCase) string {
	b, err := json.Marshal(c.Reply)
	if err != nil {
		b = []byte(fmt.Sprintf("%+v", c.Reply))
	}
	return fmt.Sprintf("%q %s", c.Name, cut(b))
}

// inputCheck makes a check that parses every input the function gives and
// reports every malformed decision (up to a bound).
func inputCheck(inputs func(ParserHarness) []ParserCase) func(*env, ParserHarness) error {
	return func(e *env, h ParserHarness) error {
		p := h.New(e.t)
		var errs []error
		for _, c := range inputs(h) {
			if _, err := parseChecked(p, c); err != nil {
				errs = append(errs, err)
			}
			if len(errs) == 5 {
				errs = append(errs, errors.New("(more failures left out)")) // says nothing of its own
				break
			}
		}
		return errors.Join(errs...)
	}
}

func checkParserCorpus(e *env, h ParserHarness) error {
	if len(h.Corpus) == 0 {
		return skipf("the harness gives no Corpus of replies the parser is meant for")
	}
	p := h.New(e.t)
	var errs []error
	for _, c := range h.Corpus {
		d, err := parseChecked(p, c)
		switch {
		case err != nil:
			errs = append(errs, err)
		case c.Want != "" && d.Kind() != c.Want:
			errs = append(errs, broke(ruleParserCorpus, "corpus %q: got %s %s, want %s", c.Name, d.Kind(), cutJSON(d), c.Want))
		}
	}
	return errors.Join(errs...)
}

func checkParserDeterministic(e *env, h ParserHarness) error {
	p, fresh := h.New(e.t), h.New(e.t)
	inputs := append(allInputs(h), hugeInputs()...)
	for _, c := range inputs {
		first, err := parse(p, c)
		if err != nil {
			return err
		}
		for i, q := range []polyloop.DecisionParser{p, fresh} {
			again, err := parse(q, c)
			if err != nil {
				return err
			}
			if !reflect.DeepEqual(first, again) {
				which := [...]string{"the same parser", "a fresh parser"}[i]
				return broke(ruleDeterministic, "input %s: parsed again by %s it gave %s, first %s; Parse must be deterministic",
					describeCase(c), which, cutJSON(again), cutJSON(first))
			}
		}
	}
	return nil
}

func checkParserReplyNotModified(e *env, h ParserHarness) error {
	p := h.New(e.t)
	for _, c := range allInputs(h) {
		before := c.Reply.Clone()
		if _, err := parse(p, c); err != nil {
			return err
		}
		if !reflect.DeepEqual(before, c.Reply) {
			return broke(ruleReplyNotModified, "input %q: Parse modified the reply: before %s, after %s", c.Name, cutJSON(before), cutJSON(c.Reply))
		}
	}
	return nil
}

func checkParserConcurrent(e *env, h ParserHarness) error {
	p := h.New(e.t)
	inputs := allInputs(h)
	want := make([]polyloop.Decision, len(inputs))
	for i, c := range inputs {
		d, err := parse(p, c)
		if err != nil {
			return err
		}
		want[i] = d
	}
	const workers = 8
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { errs[w] = parseAllAgain(p, inputs, want, w) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// parseAllAgain parses inputs, starting at an offset so that workers
// overlap on different inputs, and compares with want.
func parseAllAgain(p polyloop.DecisionParser, inputs []ParserCase, want []polyloop.Decision, offset int) error {
	for k := range inputs {
		i := (k + offset*len(inputs)/8) % len(inputs)
		d, err := parse(p, inputs[i])
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(d, want[i]) {
			return broke(ruleConcurrentUse, "input %s: concurrent Parse gave %s, sequential %s", describeCase(inputs[i]), cutJSON(d), cutJSON(want[i]))
		}
	}
	return nil
}
