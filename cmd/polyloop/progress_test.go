package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/diag"
)

func progressEvents() []polyloop.Event {
	cost := 0.25
	act := &polyloop.Action{Tool: "bash", Args: []byte(`{"command":"a && b"}`)}
	return []polyloop.Event{
		{Kind: polyloop.EventModelCallFinished, Step: 1, Reply: &polyloop.ModelReply{Usage: polyloop.Usage{InputTokens: 10, OutputTokens: 5, CostUSD: &cost}}},
		{Kind: polyloop.EventActionStarted, Step: 1, Action: act, Replay: polyloop.NeverReplay},
		{Kind: polyloop.EventActionFinished, Step: 1, StepRecord: &polyloop.StepCompleted{SettledAction: polyloop.SettledAction{Observation: "ok", Outcome: &polyloop.StepOutcome{Status: polyloop.NotExecuted}, Synthetic: true}}},
		{Kind: polyloop.EventRunFinished, StopReason: polyloop.StopMaxSteps, Totals: &polyloop.Totals{Steps: 1, InputTokens: 10, OutputTokens: 5, CostUSD: 0.25}},
	}
}

func TestProgressPlainWhenPiped(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := newProgress(&buf) // a buffer is not a terminal
	for _, ev := range progressEvents() {
		if err := p.Emit(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	want := `step 1   model  15 tokens (so far 15 tokens, $0.2500)
step 1   action bash {"command":"a && b"} [never_replay]
step 1   → not_executed  (synthetic) ok
finished: max_steps — 1 steps, 15 tokens, $0.2500
`
	if buf.String() != want {
		t.Errorf("progress:\n%s\nwant:\n%s", buf.String(), want)
	}
}

// The actions of a batch settled before its last have an action_result,
// no step record, on their action_finished: each gets its line, which names
// the action (the lines of a parallel batch come in the order its actions
// finish).
func TestProgressOfABatch(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := newProgress(&buf)
	settled := func(id string, status polyloop.ActionStatus, obs string) polyloop.SettledAction {
		return polyloop.SettledAction{ResultID: id, Attempt: 1, Outcome: &polyloop.StepOutcome{Status: status}, Observation: obs}
	}
	for _, ev := range []polyloop.Event{
		{Kind: polyloop.EventActionStarted, Step: 2, ActionID: "a2.1", Action: &polyloop.Action{Tool: "echo", Args: []byte(`{}`)}, Replay: polyloop.ReplaySafe},
		{Kind: polyloop.EventActionFinished, Step: 2, ActionResult: &polyloop.ActionResult{Step: 2, SettledAction: settled("a2.1", polyloop.Executed, "first")}},
		{Kind: polyloop.EventActionFinished, Step: 2, StepRecord: &polyloop.StepCompleted{Step: 2, Decision: polyloop.DecisionAct, SettledAction: settled("a2.2", polyloop.EnvError, "second")}},
	} {
		if err := p.Emit(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	want := "step 2   action a2.1 echo {} [replay_safe]\nstep 2   a2.1 → executed  first\nstep 2   a2.2 → env_error  second\n"
	if buf.String() != want {
		t.Errorf("progress:\n%s\nwant:\n%s", buf.String(), want)
	}
}

func TestProgressColoursOnATerminal(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := &progress{w: &buf, color: true, since: "so far"}
	for _, ev := range progressEvents() {
		_ = p.Emit(context.Background(), ev)
	}
	if !strings.Contains(buf.String(), ansiYellow+"not_executed"+ansiReset) || !strings.Contains(buf.String(), ansiRed+"finished: max_steps") {
		t.Errorf("no colours on a terminal:\n%q", buf.String())
	}
}

// TestProgressNeverPrintsAnUnknownCostAsZero: a reply without a cost (here
// without usage either, as some local servers answer) makes the running
// cost unknown; the finish line says "cost unknown" when no cost is known,
// and marks the known part otherwise.
func TestProgressNeverPrintsAnUnknownCostAsZero(t *testing.T) {
	t.Parallel()
	cost := 0.25
	var buf bytes.Buffer
	p := newProgress(&buf)
	for _, ev := range []polyloop.Event{
		{Kind: polyloop.EventModelCallFinished, Step: 1, Reply: &polyloop.ModelReply{}},
		{Kind: polyloop.EventRunFinished, StopReason: polyloop.StopCompleted, Totals: &polyloop.Totals{Steps: 1, TokensUnknown: true, CostUnknown: true}},
		{Kind: polyloop.EventModelCallFinished, Step: 2, Reply: &polyloop.ModelReply{Usage: polyloop.Usage{InputTokens: 3, CostUSD: &cost}}},
		{Kind: polyloop.EventRunFinished, StopReason: polyloop.StopCompleted, Totals: &polyloop.Totals{Steps: 2, InputTokens: 3, CostUSD: 0.25, TokensUnknown: true, CostUnknown: true}},
		{Kind: polyloop.EventModelCallFinished, Step: 3, Failure: &diag.Diagnostic{Message: "no choices"}, Usage: &polyloop.Usage{InputTokens: 5, OutputTokens: 2, CostUSD: &cost}},
		{Kind: polyloop.EventRunFinished, StopReason: polyloop.StopLLMError, Totals: &polyloop.Totals{Steps: 2, InputTokens: 8, OutputTokens: 2, CostUSD: 0.5}},
	} {
		if err := p.Emit(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}
	want := `step 1   model  tokens unknown (so far tokens unknown, cost unknown)
finished: completed — 1 steps, tokens unknown, cost unknown
step 2   model  3 tokens (so far ≥ 3 tokens, ≥ $0.2500)
finished: completed — 2 steps, ≥ 3 tokens, ≥ $0.2500
step 3   model call failed: no choices (7 tokens, $0.2500; so far ≥ 10 tokens, ≥ $0.5000)
finished: llm_error — 2 steps, 10 tokens, $0.5000
`
	if buf.String() != want {
		t.Errorf("progress:\n%s\nwant:\n%s", buf.String(), want)
	}
}

func TestColourOnlyOnACapableTerminal(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		terminal bool
		env      map[string]string
		want     bool
	}{
		{true, map[string]string{"TERM": "xterm-256color"}, true},
		{false, map[string]string{"TERM": "xterm-256color"}, false},
		{true, map[string]string{"TERM": "dumb"}, false},
		{true, map[string]string{}, false},
		{true, map[string]string{"TERM": "xterm", "NO_COLOR": "1"}, false},
	} {
		if got := useColor(tt.terminal, func(k string) string { return tt.env[k] }); got != tt.want {
			t.Errorf("terminal %v, env %v: colour %v, want %v", tt.terminal, tt.env, got, tt.want)
		}
	}
}

func TestCostStyles(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		style   costStyle
		usd     float64
		unknown bool
		want    string
	}{
		{costShort, 0.00125, false, "$0.0013"},
		{costShort, 0, false, "$0.0000"},
		{costShort, 0.000014, false, "$0.000014"},
		{costShort, 0.000014, true, "≥ $0.000014"},
		{costShort, 0.00125, true, "≥ $0.0013"},
		{costShort, 0, true, "unknown"},
		{costLong, 0.000484, false, "$0.000484"},
		{costLong, 0.000484, true, "≥ $0.000484 (some cost unknown)"},
		{costProgress, 0.25, true, "≥ $0.2500"},
		{costLong, 0, true, "cost unknown"},
	} {
		if got := tt.style.cost(tt.usd, tt.unknown); got != tt.want {
			t.Errorf("%+v.cost(%v, %v) = %q, want %q", tt.style, tt.usd, tt.unknown, got, tt.want)
		}
	}
}

func TestErrorTextSaysPolyloopOnce(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ err, want string }{
		{"run r1: polyloop: run already exists: \"r1\" has 13 records", "polyloop: run r1: run already exists: \"r1\" has 13 records"},
		{"polyloop: invalid configuration: polyloop: unknown replay policy", "polyloop: invalid configuration: unknown replay policy"},
		{"reading the task: open x: no such file", "polyloop: reading the task: open x: no such file"},
	} {
		if got := errorText(errors.New(tt.err)); got != tt.want {
			t.Errorf("errorText(%q) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
