package polyloop

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// withinLimits says "within the limits" only of what the encoder accepts:
// a RecordKeeper is never given a record a store that keeps bytes would
// refuse. Each case holds a record of a step's kinds.
func TestWithinLimitsIsSound(t *testing.T) {
	t.Parallel()
	at := time.Unix(1, 0).UTC()
	escaped := strings.Repeat("\x01", MaxRecordBytes/6+16) // each byte takes six once escaped
	reply := func(text string, args string, cost float64) *ModelCallResult {
		r := &ModelReply{Text: text, ToolCalls: []ToolCall{{ID: "c", Name: "t", Args: json.RawMessage(args)}}}
		if cost != 0 {
			r.Usage.CostUSD = &cost
		}
		return &ModelCallResult{Step: 1, CallID: "m1.1", Reply: r}
	}
	cases := map[string]RecordBody{
		"small result":           reply("hi", `{"a":1}`, 0.5),
		"args not JSON":          reply("hi", `{"a":`, 0),
		"args invalid UTF-8":     reply("hi", "[\"\xff\"]", 0),
		"args too deep":          reply("hi", strings.Repeat("[", MaxJSONDepth+1)+strings.Repeat("]", MaxJSONDepth+1), 0),
		"cost NaN":               reply("hi", `{}`, math.NaN()),
		"cost infinite":          reply("hi", `{}`, math.Inf(1)),
		"text escaped past size": reply(escaped, `{}`, 0),
		"observation past size": &StepCompleted{Step: 1, ModelCallID: "m1.1", Decision: DecisionAct, SettledAction: SettledAction{
			ResultID: "a1", Outcome: &StepOutcome{Status: Executed}, Observation: escaped}},
		"intent args not JSON": &ActionIntent{Step: 1, ActionID: "a1", Attempt: 1, ModelCallID: "m1.1", Replay: ReplaySafe,
			Action: Action{Tool: "t", Args: json.RawMessage(`[1,`)}},
		"intent": &ActionIntent{Step: 1, ActionID: "a1", Attempt: 1, ModelCallID: "m1.1", Replay: ReplaySafe,
			Action: Action{Tool: "t", Args: json.RawMessage(`[1]`)}},
		"model call": &ModelCallIntent{Step: 1, CallID: "m1.1", Attempt: 1, View: &ViewRef{Name: "v", Version: 2}},
		"result of a step": &ActionResult{Step: 1, SettledAction: SettledAction{ResultID: "a1", Outcome: &StepOutcome{Status: NotExecuted},
			Synthetic: true, Observation: "x", Audit: "y"}},
	}
	accepted := 0
	for name, body := range cases {
		r := Record{Seq: 1, At: at, Body: body}
		if !withinLimits(r, false, false) {
			continue
		}
		accepted++
		if _, err := encodeChecked("r", nil, r, false); err != nil {
			t.Errorf("%s: withinLimits accepts what the encoder refuses: %v", name, err)
		}
	}
	if accepted < 4 {
		t.Fatalf("withinLimits accepted only %d of the cases: the fast path is never taken", accepted)
	}
	for name, body := range map[string]RecordBody{"small result": cases["small result"], "intent": cases["intent"]} {
		if !withinLimits(Record{Seq: 1, At: at, Body: body}, false, false) {
			t.Errorf("%s: withinLimits sends a small record of a step to the encoder", name)
		}
	}
}

// FuzzWithinLimits: whatever a step's record holds, withinLimits accepts it
// only if the encoder does.
func FuzzWithinLimits(f *testing.F) {
	f.Add("text", `{"a":[1,2]}`, 1.5, "obs")
	f.Add("\x00\u2028\xff", "[\"\xff\"]", math.Inf(-1), "\\\"")
	f.Add("", `{"a":`, 0.0, "")
	f.Fuzz(func(t *testing.T, text, args string, cost float64, obs string) {
		at := time.Unix(1, 0).UTC()
		bodies := []RecordBody{
			&ModelCallResult{Step: 1, CallID: "m1.1", Reply: &ModelReply{Text: text, Usage: Usage{CostUSD: &cost},
				ToolCalls: []ToolCall{{ID: text, Name: "t", Args: json.RawMessage(args)}}}},
			&ActionIntent{Step: 1, ActionID: "a1", Attempt: 1, ModelCallID: "m1.1", Replay: ReplaySafe,
				Action: Action{CallID: text, Tool: "t", Args: json.RawMessage(args)}},
			&StepCompleted{Step: 1, ModelCallID: "m1.1", Decision: DecisionInvalid, Feedback: text + obs},
		}
		for _, b := range bodies {
			r := Record{Seq: 1, At: at, Body: b}
			if withinLimits(r, false, false) {
				if _, err := encodeChecked("r", nil, r, false); err != nil {
					t.Fatalf("%T: withinLimits accepts what the encoder refuses: %v", b, err)
				}
			}
		}
	})
}
