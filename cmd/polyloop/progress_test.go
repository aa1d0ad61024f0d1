package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
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
