package polylooptest

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/polyloop/polyloop"
)

// parserFunc adapts a function to DecisionParser.
type parserFunc func(polyloop.ModelReply) polyloop.Decision

func (f parserFunc) Parse(r polyloop.ModelReply) polyloop.Decision { return f(r) }

// breakParser returns goodParser's decision unless broken gives one.
func breakParser(broken func(r polyloop.ModelReply) polyloop.Decision) func(testing.TB) polyloop.DecisionParser {
	return func(testing.TB) polyloop.DecisionParser {
		return parserFunc(func(r polyloop.ModelReply) polyloop.Decision {
			if d := broken(r); d != nil {
				return d
			}
			return goodParser{}.Parse(r)
		})
	}
}

func parserWith(f func(r polyloop.ModelReply) polyloop.Decision) ParserHarness {
	h := goodParserHarness()
	h.New = breakParser(f)
	return h
}

func brokenParserCases() []brokenCase {
	c := func(check string, r rule, h ParserHarness) brokenCase {
		return brokenCase{"DecisionParser", check, r, func(t *testing.T) outcome { return runNamed(t, parserChecks, check, h, h.settings()) }}
	}
	var counter atomic.Int64
	var mu sync.Mutex
	return []brokenCase{
		c("Corpus", ruleParserCorpus, parserWith(func(r polyloop.ModelReply) polyloop.Decision {
			return polyloop.Invalid{Feedback: "I understand nothing"}
		})),
		c("EdgeCases", ruleInvalidFeedback, parserWith(func(r polyloop.ModelReply) polyloop.Decision {
			if r.Text == "" && len(r.ToolCalls) == 0 {
				return polyloop.Invalid{Feedback: "  "}
			}
			return nil
		})),
		c("EdgeCases", ruleNoPanic, parserWith(func(r polyloop.ModelReply) polyloop.Decision {
			if strings.Contains(r.Text, "```") && !strings.HasSuffix(r.Text, "```") {
				panic("unclosed fence")
			}
			return nil
		})),
		c("EdgeCases", ruleActHasActions, parserWith(func(r polyloop.ModelReply) polyloop.Decision {
			if len(r.ToolCalls) > 0 && r.ToolCalls[0].Name == "" {
				return polyloop.Act{} // an Act of no action for a call without a name
			}
			return nil
		})),
		// Checks only the first call of a batch: the second's broken
		// arguments reach the Act.
		c("EdgeCases", ruleArgsAreJSON, parserWith(func(r polyloop.ModelReply) polyloop.Decision {
			if len(r.ToolCalls) < 2 || r.ToolCalls[0].Name == "" || !json.Valid(r.ToolCalls[0].Args) {
				return nil
			}
			var act polyloop.Act
			for _, tc := range r.ToolCalls {
				act.Actions = append(act.Actions, polyloop.Action{CallID: tc.ID, Tool: tc.Name, Args: tc.Args})
			}
			return act
		})),
		c("Generated", ruleOneDecision, parserWith(func(r polyloop.ModelReply) polyloop.Decision {
			if strings.Contains(r.Text, "\x00") {
				return &polyloop.Final{Answer: r.Text}
			}
			return nil
		})),
		c("HugeInputs", ruleNoPanic, parserWith(func(r polyloop.ModelReply) polyloop.Decision {
			if len(r.Text) > 1<<19 {
				panic("buffer too small")
			}
			return nil
		})),
		c("InvalidUTF8", ruleArgsAreJSON, parserWith(func(r polyloop.ModelReply) polyloop.Decision {
			if !utf8.ValidString(r.Text) {
				return polyloop.ActOne(polyloop.Action{Tool: "echo", Args: []byte(r.Text)})
			}
			return nil
		})),
		c("Deterministic", ruleDeterministic, parserWith(func(r polyloop.ModelReply) polyloop.Decision {
			if len(r.ToolCalls) > 1 {
				return polyloop.Invalid{Feedback: "too many calls, attempt " + string(rune('0'+counter.Add(1)%10))}
			}
			return nil
		})),
		c("ReplyNotModified", ruleReplyNotModified, parserWith(func(r polyloop.ModelReply) polyloop.Decision {
			if len(r.ToolCalls) == 1 && len(r.ToolCalls[0].Args) > 0 {
				copy(r.ToolCalls[0].Args, bytes.ToUpper(r.ToolCalls[0].Args))
			}
			return nil
		})),
		c("Concurrent", ruleConcurrentUse, fewerInputs(parserWith(func(r polyloop.ModelReply) polyloop.Decision {
			if !mu.TryLock() {
				return polyloop.Invalid{Feedback: "busy"}
			}
			defer mu.Unlock()
			spin()
			return nil
		}))),
	}
}

func fewerInputs(h ParserHarness) ParserHarness {
	h.Generated = 10
	return h
}
