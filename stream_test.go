package polyloop_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
)

// streamScript is a streaming client that plays, per step, a list of client
// attempts: each attempt's text fragments; every attempt but the last is
// retried by the client (superseded); the last becomes the reply, or fails
// after its fragments when fail is set.
type streamScript struct {
	steps map[int][][]string
	fail  bool
	calls int
}

func (s *streamScript) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	return s.Stream(ctx, req, func(polyloop.Delta) {})
}

func (s *streamScript) Stream(ctx context.Context, req polyloop.ModelRequest, deltas func(polyloop.Delta)) (polyloop.ModelReply, error) {
	s.calls++
	attempts := s.steps[req.Step]
	var text string
	for i, frags := range attempts {
		text = ""
		for _, f := range frags {
			deltas(polyloop.Delta{Attempt: i + 1, Text: f})
			text += f
		}
		if i < len(attempts)-1 {
			deltas(polyloop.Delta{Attempt: i + 1, Superseded: true})
		}
	}
	if s.fail {
		return polyloop.ModelReply{}, errors.New("stream broken")
	}
	return polyloop.ModelReply{Text: text, Usage: polyloop.Usage{InputTokens: 5, OutputTokens: 2}}, nil
}

// deltaSink is a collectSink that wants deltas.
type deltaSink struct{ collectSink }

func (*deltaSink) WantsDeltas() bool { return true }

// render lists the model events of a run: deltas, superseded candidates and
// the finished calls.
func renderStream(events []polyloop.Event) string {
	var b strings.Builder
	for _, ev := range events {
		switch ev.Kind {
		case polyloop.EventModelDelta:
			fmt.Fprintf(&b, "delta %s/%d %q\n", ev.CallID, ev.Delta.Attempt, ev.Delta.Text)
		case polyloop.EventCandidateSuperseded:
			client := 0
			if ev.Delta != nil {
				client = ev.Delta.Attempt
			}
			fmt.Fprintf(&b, "superseded %s/%d\n", ev.CallID, client)
		case polyloop.EventModelCallStarted:
			fmt.Fprintf(&b, "started %s\n", ev.CallID)
		case polyloop.EventModelCallFinished:
			if ev.Failure != nil {
				fmt.Fprintf(&b, "failed %s\n", ev.CallID)
			} else {
				fmt.Fprintf(&b, "finished %s %q\n", ev.CallID, ev.Reply.Text)
			}
		}
	}
	return b.String()
}

// Streamed deltas reach the sinks tied to the call and the client's
// attempt; a client retry supersedes its attempt explicitly; the final
// reply is the last attempt's text, and deltas are never records.
func TestStreamedDeltasAndSuperseded(t *testing.T) {
	sink := &deltaSink{}
	store := memstore.New()
	model := &streamScript{steps: map[int][][]string{1: {{"Hel", "p"}, {"Hel", "lo"}}}}
	r := &polyloop.Runner{Model: model, Parser: testParser{}, Executor: newTestExec(), Store: store, Sinks: []polyloop.EventSink{sink}}
	res, err := r.Run(context.Background(), "s", testAgent(), polyloop.Task{Input: "t"})
	if err != nil || res.FinalAnswer != "Hello" {
		t.Fatalf("%+v, %v", res, err)
	}
	want := `started m1.1
delta m1.1/1 "Hel"
delta m1.1/1 "p"
superseded m1.1/1
delta m1.1/2 "Hel"
delta m1.1/2 "lo"
finished m1.1 "Hello"
`
	if got := renderStream(sink.events); got != want {
		t.Fatalf("events:\n%s\nwant:\n%s", got, want)
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "s")
	if n := len(log.Records); n != 5 {
		t.Fatalf("%d records: streaming must add none", n)
	}
}

// A stream that fails after some deltas: the library announces the
// attempt superseded, and the run finishes llm_error.
func TestStreamFailureSupersedes(t *testing.T) {
	sink := &deltaSink{}
	model := &streamScript{steps: map[int][][]string{1: {{"Par", "tial"}}}, fail: true}
	r := &polyloop.Runner{Model: model, Parser: testParser{}, Executor: newTestExec(), Store: memstore.New(), Sinks: []polyloop.EventSink{sink}}
	res, err := r.Run(context.Background(), "s", testAgent(), polyloop.Task{Input: "t"})
	if err != nil || res.StopReason != polyloop.StopLLMError {
		t.Fatalf("%+v, %v", res, err)
	}
	want := "started m1.1\ndelta m1.1/1 \"Par\"\ndelta m1.1/1 \"tial\"\nsuperseded m1.1/1\nfailed m1.1\n"
	if got := renderStream(sink.events); got != want {
		t.Fatalf("events:\n%s\nwant:\n%s", got, want)
	}
}

// A run killed during a streamed call and resumed: the event log shows the
// old attempt superseded and the new attempt's deltas only.
func TestStreamResumeSupersedesTheOrphan(t *testing.T) {
	ctx := context.Background()
	model := &streamScript{steps: map[int][][]string{1: {{"an", "swer"}}}}
	full := memstore.New()
	if _, err := (&polyloop.Runner{Model: model, Parser: testParser{}, Executor: newTestExec(), Store: full}).Run(ctx, "s", testAgent(), polyloop.Task{Input: "t"}); err != nil {
		t.Fatal(err)
	}
	log, _ := polyloop.ReadLog(ctx, full, "s")
	crashed := memstore.New()
	crashed.Put("s", log.Records[:2]) // run_started and the intent: the call's result was lost
	sink := &deltaSink{}
	r := &polyloop.Runner{Model: model, Parser: testParser{}, Executor: newTestExec(), Store: crashed, Sinks: []polyloop.EventSink{sink}}
	if _, err := r.Resume(ctx, "s", testAgent()); err != nil {
		t.Fatal(err)
	}
	want := "superseded m1.1/0\nstarted m1.2\ndelta m1.2/1 \"an\"\ndelta m1.2/1 \"swer\"\nfinished m1.2 \"answer\"\n"
	if got := renderStream(sink.events); got != want {
		t.Fatalf("events:\n%s\nwant:\n%s", got, want)
	}
}

// Without a sink that wants deltas nothing streams: the client's Complete
// is called.
func TestNoDeltaSinkNoStream(t *testing.T) {
	for name, sinks := range map[string][]polyloop.EventSink{"no sinks": nil, "a sink without deltas": {&collectSink{}}} {
		model := &countingStream{}
		r := &polyloop.Runner{Model: model, Parser: testParser{}, Executor: newTestExec(), Store: memstore.New(), Sinks: sinks}
		if _, err := r.Run(context.Background(), "s", testAgent(), polyloop.Task{Input: "t"}); err != nil {
			t.Fatal(err)
		}
		if model.streams != 0 || model.completes != 1 {
			t.Fatalf("%s: %d streams, %d completes", name, model.streams, model.completes)
		}
	}
}

type countingStream struct{ streams, completes int }

func (c *countingStream) Complete(context.Context, polyloop.ModelRequest) (polyloop.ModelReply, error) {
	c.completes++
	return polyloop.ModelReply{Text: "a", Usage: polyloop.Usage{InputTokens: 1}}, nil
}

func (c *countingStream) Stream(context.Context, polyloop.ModelRequest, func(polyloop.Delta)) (polyloop.ModelReply, error) {
	c.streams++
	return polyloop.ModelReply{Text: "a", Usage: polyloop.Usage{InputTokens: 1}}, nil
}
