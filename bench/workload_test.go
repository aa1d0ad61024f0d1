package bench_test

import (
	"context"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/bench"
	"github.com/polyloop/polyloop/memstore"
)

// W is public: peers run the same thing. These tests pin its definition.

func TestWorkloadTexts(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		want int
	}{
		{"ReplyText", bench.ReplyText, 200},
		{"Note", bench.Note, 50},
		{"ToolResult", bench.ToolResult, 100},
	} {
		if n := utf8.RuneCountInString(tc.text); n != tc.want {
			t.Errorf("%s has %d characters, want %d", tc.name, n, tc.want)
		}
	}
}

func TestWorkloadRun(t *testing.T) {
	w := bench.Workload{Steps: 7}
	st := memstore.New()
	res, err := w.Runner(st).Run(context.Background(), "w", w.Agent(), w.Task())
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != polyloop.StopCompleted || res.FinalAnswer != bench.FinalAnswer ||
		res.Totals.Steps != 8 || res.Totals.Actions != 7 || res.Records != w.RecordsPerRun() {
		t.Fatalf("run of W: %+v", res)
	}
	log, err := polyloop.ReadLog(context.Background(), st, "w")
	if err != nil {
		t.Fatal(err)
	}
	intents := log.ActionIntents()
	if len(intents) != 7 {
		t.Fatalf("%d action intents, want 7", len(intents))
	}
	for i, in := range intents {
		var args struct {
			I    int    `json:"i"`
			Note string `json:"note"`
		}
		if err := json.Unmarshal(in.Action.Args, &args); err != nil {
			t.Fatal(err)
		}
		if in.Action.Tool != "noop" || in.Replay != polyloop.ReplaySafe || args.I != i+1 || args.Note != bench.Note {
			t.Errorf("step %d: action %+v (replay %s), args %+v", i+1, in.Action, in.Replay, args)
		}
	}
	for i, s := range log.Steps()[:7] {
		if s.Observation != bench.ToolResult || s.Outcome == nil || s.Outcome.Status != polyloop.Executed {
			t.Errorf("step %d: %+v", i+1, s)
		}
	}
	for i, r := range log.ModelResults()[:7] {
		if r.Reply.Text != bench.ReplyText || len(r.Reply.ToolCalls) != 1 {
			t.Errorf("reply %d: %+v", i+1, r.Reply)
		}
	}
}
