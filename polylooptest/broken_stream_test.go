package polylooptest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// scriptStream is a streaming client that plays attempts of deltas (each
// numbered by its position), superseding every attempt but the last, and
// then returns reply — or fails with fail, or blocks until cancelled with
// hang. Its other fields break it in one way each.
type scriptStream struct {
	attempts [][]polyloop.Delta
	reply    polyloop.ModelReply
	fail     error
	hang     bool

	glue       bool                 // no superseded between attempts
	late       bool                 // one more delta, from a goroutine, after returning
	concurrent bool                 // an attempt's deltas from two goroutines at once
	complete   *polyloop.ModelReply // what Complete answers, when it differs
	ignoresCtx bool                 // a done context is not an error
	numbered   bool                 // the deltas' attempts are as given
}

func (s *scriptStream) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	if err := ctx.Err(); err != nil && !s.ignoresCtx {
		return polyloop.ModelReply{}, err
	}
	if s.complete != nil {
		return *s.complete, nil
	}
	return s.reply, nil
}

func (s *scriptStream) Stream(ctx context.Context, req polyloop.ModelRequest, deltas func(polyloop.Delta)) (polyloop.ModelReply, error) {
	if err := ctx.Err(); err != nil && !s.ignoresCtx {
		return polyloop.ModelReply{}, err
	}
	for i, ds := range s.attempts {
		s.deliver(i+1, ds, deltas)
		if i < len(s.attempts)-1 && !s.glue {
			deltas(polyloop.Delta{Attempt: i + 1, Superseded: true})
		}
	}
	if s.late {
		done := make(chan struct{})
		go func() {
			<-done
			time.Sleep(5 * time.Millisecond) // well after Stream returned
			deltas(polyloop.Delta{Attempt: len(s.attempts), Text: " (late)"})
		}()
		defer close(done)
	}
	if s.hang {
		<-ctx.Done()
		if s.ignoresCtx {
			return s.reply, nil
		}
		return polyloop.ModelReply{}, ctx.Err()
	}
	if s.fail != nil {
		return polyloop.ModelReply{}, s.fail
	}
	return s.reply, nil
}

func (s *scriptStream) deliver(attempt int, ds []polyloop.Delta, deltas func(polyloop.Delta)) {
	number := func(d polyloop.Delta) polyloop.Delta {
		if !s.numbered {
			d.Attempt = attempt
		}
		return d
	}
	if !s.concurrent {
		for _, d := range ds {
			deltas(number(d))
		}
		return
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			<-start
			for _, d := range ds {
				deltas(number(polyloop.Delta{Attempt: d.Attempt}))
			}
		})
	}
	close(start)
	wg.Wait()
}

// spentErr is a failure that carries what the call consumed.
type spentErr struct{}

func (spentErr) Error() string             { return "stream broken" }
func (spentErr) CallUsage() polyloop.Usage { return polyloop.Usage{InputTokens: 7} }

var (
	goodDeltas = []polyloop.Delta{{Text: "Hel"}, {Text: "lo"},
		{ToolCall: 0, ToolCallID: "c1", ToolName: "t", Args: `{"a": `}, {ToolCall: 0, Args: `"<b>"}`}}
	partialDeltas = []polyloop.Delta{{Text: "Hel"}, {Text: "p"}}
	goodReply     = polyloop.ModelReply{Text: "Hello", Model: "good-1", Attempts: 1,
		ToolCalls: []polyloop.ToolCall{{ID: "c1", Name: "t", Args: json.RawMessage(`{"a":"\u003cb\u003e"}`)}},
		Usage:     polyloop.Usage{InputTokens: 12, OutputTokens: 3}}
)

func goodStream() *scriptStream {
	return &scriptStream{attempts: [][]polyloop.Delta{goodDeltas}, reply: goodReply}
}

func goodStreamHarness() StreamingClientHarness {
	retried := goodReply
	retried.Attempts = 2
	return StreamingClientHarness{
		New: func(testing.TB) polyloop.StreamingModelClient { return goodStream() },
		NewRetried: func(testing.TB) polyloop.StreamingModelClient {
			return &scriptStream{attempts: [][]polyloop.Delta{partialDeltas, goodDeltas}, reply: retried}
		},
		NewBroken: func(testing.TB) polyloop.StreamingModelClient {
			return &scriptStream{attempts: [][]polyloop.Delta{partialDeltas}, fail: spentErr{}}
		},
		BrokenUsage: true,
		NewHanging: func(testing.TB) polyloop.StreamingModelClient {
			return &scriptStream{attempts: [][]polyloop.Delta{partialDeltas}, hang: true}
		},
	}
}

func (h StreamingClientHarness) settings() settings {
	return newSettings(h.Timeout, h.CancelWithin, h.Skip)
}

func streamWith(f func(h *StreamingClientHarness)) StreamingClientHarness {
	h := goodStreamHarness()
	f(&h)
	return h
}

func newStream(s *scriptStream) func(testing.TB) polyloop.StreamingModelClient {
	return func(testing.TB) polyloop.StreamingModelClient { return s }
}

func brokenStreamCases() []brokenCase {
	c := func(check string, r rule, h StreamingClientHarness) brokenCase {
		return brokenCase{"StreamingModelClient", check, r, func(t *testing.T) outcome { return runNamed(t, streamChecks, check, h, h.settings()) }}
	}
	mismatch := goodStream()
	mismatch.attempts = [][]polyloop.Delta{partialDeltas}
	badArgs := goodStream()
	badArgs.attempts = [][]polyloop.Delta{{{Text: "Hello"}, {ToolCall: 0, ToolCallID: "c1", Args: `{"a": 2}`}}}
	zeroAttempt := goodStream()
	zeroAttempt.numbered, zeroAttempt.attempts = true, [][]polyloop.Delta{{{Text: "Hello"}}}
	concurrent := goodStream()
	concurrent.concurrent = true
	late := goodStream()
	late.late = true
	disagrees := goodStream()
	other := goodReply
	other.Text = "Hello, world"
	disagrees.complete = &other
	return []brokenCase{
		c("Streams", ruleModelAnswers, streamWith(func(h *StreamingClientHarness) {
			h.New = newStream(&scriptStream{attempts: [][]polyloop.Delta{partialDeltas}, fail: errors.New("down")})
		})),
		c("Streams", ruleDeltasConcatenate, streamWith(func(h *StreamingClientHarness) { h.New = newStream(mismatch) })),
		c("Streams", ruleDeltasConcatenate, streamWith(func(h *StreamingClientHarness) { h.New = newStream(badArgs) })),
		c("Streams", ruleDeltaForm, streamWith(func(h *StreamingClientHarness) { h.New = newStream(zeroAttempt) })),
		c("Streams", ruleDeltasSerial, streamWith(func(h *StreamingClientHarness) { h.New = newStream(concurrent) })),
		c("AgreesWithComplete", ruleStreamSameReply, streamWith(func(h *StreamingClientHarness) { h.New = newStream(disagrees) })),
		c("NoDeltasAfterReturn", ruleNoLateDeltas, streamWith(func(h *StreamingClientHarness) { h.New = newStream(late) })),
		c("SupersededBeforeRetry", ruleSupersedeBeforeNew, streamWith(func(h *StreamingClientHarness) {
			h.NewRetried = newStream(&scriptStream{attempts: [][]polyloop.Delta{partialDeltas, goodDeltas}, reply: goodReply, glue: true})
		})),
		c("SupersededBeforeRetry", ruleDeltasConcatenate, streamWith(func(h *StreamingClientHarness) {
			// The retry's reply is the first attempt's text glued to the second's.
			glued := goodReply
			glued.Text = "HelpHello"
			h.NewRetried = newStream(&scriptStream{attempts: [][]polyloop.Delta{partialDeltas, goodDeltas}, reply: glued})
		})),
		c("FailureMidStream", ruleFailureIsError, streamWith(func(h *StreamingClientHarness) {
			h.NewBroken = newStream(&scriptStream{attempts: [][]polyloop.Delta{partialDeltas}})
		})),
		c("FailureMidStream", ruleFailureNotCancelled, streamWith(func(h *StreamingClientHarness) {
			h.NewBroken = newStream(&scriptStream{attempts: [][]polyloop.Delta{partialDeltas}, fail: context.DeadlineExceeded})
		})),
		c("FailureMidStream", ruleStreamUsageKept, streamWith(func(h *StreamingClientHarness) {
			h.NewBroken = newStream(&scriptStream{attempts: [][]polyloop.Delta{partialDeltas}, fail: errors.New("stream broken")})
		})),
		c("FailureMidStream", ruleSupersedeBeforeNew, streamWith(func(h *StreamingClientHarness) {
			h.NewBroken = newStream(&scriptStream{attempts: [][]polyloop.Delta{partialDeltas, partialDeltas}, fail: spentErr{}, glue: true})
		})),
		c("CancelledContext", ruleCancelError, streamWith(func(h *StreamingClientHarness) {
			h.New = newStream(&scriptStream{attempts: [][]polyloop.Delta{goodDeltas}, reply: goodReply, ignoresCtx: true})
		})),
		c("CancelInFlight", ruleCancelError, streamWith(func(h *StreamingClientHarness) {
			h.NewHanging = newStream(&scriptStream{attempts: [][]polyloop.Delta{partialDeltas}, hang: true, ignoresCtx: true})
		})),
		c("CancelInFlight", ruleCancelPromptly, streamWith(func(h *StreamingClientHarness) {
			h.CancelWithin = 20 * time.Millisecond
			h.NewHanging = func(testing.TB) polyloop.StreamingModelClient { return slowRelease{} }
		})),
	}
}

// slowRelease delivers a delta, then takes long to release its stream once
// cancelled.
type slowRelease struct{}

func (slowRelease) Complete(context.Context, polyloop.ModelRequest) (polyloop.ModelReply, error) {
	return goodReply, nil
}

func (slowRelease) Stream(ctx context.Context, _ polyloop.ModelRequest, deltas func(polyloop.Delta)) (polyloop.ModelReply, error) {
	deltas(polyloop.Delta{Attempt: 1, Text: "Hel"})
	<-ctx.Done()
	time.Sleep(200 * time.Millisecond)
	return polyloop.ModelReply{}, ctx.Err()
}

// CheckDeltas is the suite's check, for an adapter's own fixtures.
func TestCheckDeltas(t *testing.T) {
	good := append([]polyloop.Delta{}, goodDeltas...)
	for i := range good {
		good[i].Attempt = 1
	}
	if err := CheckDeltas(good, goodReply); err != nil {
		t.Errorf("good deltas: %v", err)
	}
	glued := append(append([]polyloop.Delta{}, partialDeltas...), polyloop.Delta{Attempt: 2, Text: "Hello"})
	for i := range partialDeltas {
		glued[i].Attempt = 1
	}
	if err := CheckDeltas(glued, polyloop.ModelReply{Text: "Hello"}); !slices.Contains(rulesOf(err), ruleSupersedeBeforeNew) {
		t.Errorf("glued attempts: %v", err)
	}
}
