package polylooptest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// StreamingClientHarness tells TestStreamingModelClient how to drive a
// polyloop.StreamingModelClient. Only New is required; every check that
// needs a missing field is skipped with the reason logged.
type StreamingClientHarness struct {
	// New returns a fresh client whose calls succeed in one attempt with a
	// reply that has text or tool calls, streamed as deltas by Stream; its
	// Complete answers the same (for an HTTP client: one pointed at a fake
	// server that answers a streamed request with events and another with
	// the same reply in one body). It is called once or more per subtest,
	// from a goroutine other than the test's: use t.Cleanup to release what
	// it holds.
	New func(t testing.TB) polyloop.StreamingModelClient
	// Request is sent for every call. The zero value means
	// DefaultRequest(). The kit sets Params.Retries for the checks that need
	// a retry (at least 1) or none (0).
	Request polyloop.ModelRequest
	// NewRetried returns a client whose first attempt delivers deltas and
	// then fails in a way the client retries (a stream cut short, an error
	// event), and whose next attempt succeeds. Nil: SupersededBeforeRetry
	// is skipped.
	NewRetried func(t testing.TB) polyloop.StreamingModelClient
	// NewBroken returns a client whose stream fails after delivering
	// deltas. Nil: FailureMidStream is skipped.
	NewBroken func(t testing.TB) polyloop.StreamingModelClient
	// BrokenUsage says that NewBroken's stream reports usage before it
	// fails: the error must then carry it (polyloop.UsageCarrier).
	BrokenUsage bool
	// NewHanging returns a client whose stream delivers deltas, then blocks
	// until its context is done. Nil: CancelInFlight is skipped.
	NewHanging func(t testing.TB) polyloop.StreamingModelClient
	// Skip names checks the implementation cannot honour, each with the
	// reason logged; a name that is no check of the suite fails the suite.
	Skip map[string]string
	// Timeout is the watchdog of each subtest (DefaultTimeout when zero).
	Timeout time.Duration
	// CancelWithin is how soon a call must return once its context is done
	// (DefaultCancelWithin when zero).
	CancelWithin time.Duration
}

// The rules of StreamingModelClient.
const (
	ruleDeltaForm          rule = "each delta MUST name its client attempt (1, 2 …, never going back), and a superseded one carries nothing else"
	ruleDeltasConcatenate  rule = "the deltas of the attempt that became the reply MUST concatenate to its text and to each tool call's arguments"
	ruleSupersedeBeforeNew rule = "an attempt that delivered deltas and did not become the reply MUST be superseded before the next attempt's first delta"
	ruleNoLateDeltas       rule = "Stream MUST NOT deliver deltas after it returned"
	ruleDeltasSerial       rule = "Stream MUST deliver deltas from one goroutine at a time"
	ruleStreamSameReply    rule = "Stream MUST return the reply Complete returns for the same answer"
	ruleStreamUsageKept    rule = "usage a stream reported before it failed MUST be on the error (polyloop.UsageCarrier)"
)

var streamRules = []rule{ruleDeltaForm, ruleDeltasConcatenate, ruleSupersedeBeforeNew, ruleNoLateDeltas,
	ruleDeltasSerial, ruleStreamSameReply, ruleStreamUsageKept}

// TestStreamingModelClient checks that the clients made by h honour the
// StreamingModelClient contract (see polyloop.StreamingModelClient). Run it
// with -race, from a test that is not parallel with others (the leak checks
// see the process's goroutines). It checks streaming only: run
// TestModelClient for Complete.
//
// The checks (subtest names, usable as keys of h.Skip):
//   - Streams: a streamed call of New's client succeeds; its deltas name
//     attempts from 1 on, arrive one at a time, and those of the attempt
//     that became the reply concatenate to the reply's text and to each
//     tool call's arguments (and name its id and tool).
//   - AgreesWithComplete: Stream returns the reply Complete returns.
//   - NoDeltasAfterReturn: no delta arrives once Stream has returned, also
//     once the goroutines it started have ended (or lateWindow passed).
//   - SupersededBeforeRetry: NewRetried's call succeeds after a retry;
//     the retried attempt is superseded before the next attempt's first
//     delta, and the accepted attempt's deltas concatenate to the reply.
//   - FailureMidStream: NewBroken's call returns a non-nil error that is
//     not a context error, after the deltas it delivered (an attempt it
//     retried is superseded); with BrokenUsage, the error carries the
//     usage (polyloop.UsageCarrier).
//   - CancelledContext: Stream with a done context returns promptly an
//     error that errors.Is the context's error.
//   - CancelInFlight: a stream of NewHanging's client, cancelled once its
//     first delta arrived, returns promptly with the context's error,
//     leaking no goroutine and delivering nothing after it returned.
func TestStreamingModelClient(t *testing.T, h StreamingClientHarness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("polylooptest: StreamingClientHarness.New is required")
	}
	runSuite(t, "StreamingModelClient", h, newSettings(h.Timeout, h.CancelWithin, h.Skip), streamChecks)
}

var streamChecks = []check[StreamingClientHarness]{
	{"Streams", checkStreams},
	{"AgreesWithComplete", checkStreamAgreesWithComplete},
	{"NoDeltasAfterReturn", checkNoDeltasAfterReturn},
	{"SupersededBeforeRetry", checkSupersededBeforeRetry},
	{"FailureMidStream", checkFailureMidStream},
	{"CancelledContext", checkStreamCancelledContext},
	{"CancelInFlight", checkStreamCancelInFlight},
}

// request is the harness's request with retries retries.
func (h StreamingClientHarness) request(retries int) polyloop.ModelRequest {
	req := h.Request
	if len(req.Messages) == 0 {
		req = DefaultRequest()
	}
	req.Params.Retries = retries
	return req
}

// deltaRecorder is the deltas callback of one Stream call: it keeps the
// deltas and notes those that come late or overlap.
type deltaRecorder struct {
	mu       sync.Mutex
	deltas   []polyloop.Delta
	returned bool
	late     []polyloop.Delta
	overlap  bool
	inFlight atomic.Int32
	first    chan struct{} // closed at the first delta
	once     sync.Once
}

func newRecorder() *deltaRecorder { return &deltaRecorder{first: make(chan struct{})} }

// overlapHold is how long a delivery holds, so that deliveries from two
// goroutines at once overlap.
const overlapHold = 50 * time.Microsecond

func (r *deltaRecorder) deliver(d polyloop.Delta) {
	if r.inFlight.Add(1) > 1 {
		r.mu.Lock()
		r.overlap = true
		r.mu.Unlock()
	}
	defer r.inFlight.Add(-1)
	r.mu.Lock()
	if r.returned {
		r.late = append(r.late, d)
	}
	r.deltas = append(r.deltas, d)
	r.mu.Unlock()
	r.once.Do(func() { close(r.first) })
	time.Sleep(overlapHold)
}

// stream calls c.Stream with a fresh recorder and marks when it returned.
func stream(ctx context.Context, c polyloop.StreamingModelClient, req polyloop.ModelRequest) (polyloop.ModelReply, *deltaRecorder, error) {
	rec := newRecorder()
	reply, err := c.Stream(ctx, req, rec.deliver)
	rec.mu.Lock()
	rec.returned = true
	rec.mu.Unlock()
	return reply, rec, err
}

// problems reports deltas that came late or overlapped.
func (r *deltaRecorder) problems() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	if len(r.late) > 0 {
		errs = append(errs, broke(ruleNoLateDeltas, "%d delta(s) arrived after Stream returned, the first %s", len(r.late), cutJSON(r.late[0])))
	}
	if r.overlap {
		errs = append(errs, broke(ruleDeltasSerial, "two deliveries of deltas ran at the same time"))
	}
	return errors.Join(errs...)
}

func (r *deltaRecorder) all() []polyloop.Delta {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]polyloop.Delta(nil), r.deltas...)
}

// streamed makes one successful streamed call of New's client and checks
// its deltas.
func streamed(e *env, h StreamingClientHarness) (polyloop.ModelReply, error) {
	reply, rec, err := stream(e.ctx, h.New(e.t), h.request(0))
	if err != nil {
		return reply, broke(ruleModelAnswers, "Stream on New's client failed: %w", err)
	}
	if len(reply.Text) == 0 && len(reply.ToolCalls) == 0 {
		return reply, errors.New("polylooptest: New's reply has neither text nor tool calls, so its deltas show nothing: the harness must answer with content")
	}
	accepted, _, err := checkDeltas(rec.all())
	if err != nil {
		return reply, err
	}
	return reply, errors.Join(rec.problems(), concatenates(accepted, reply))
}

func checkStreams(e *env, h StreamingClientHarness) error {
	_, err := streamed(e, h)
	return err
}

func checkStreamAgreesWithComplete(e *env, h StreamingClientHarness) error {
	got, err := streamed(e, h)
	if err != nil {
		return err
	}
	want, err := h.New(e.t).Complete(e.ctx, h.request(0))
	if err != nil {
		return broke(ruleModelAnswers, "Complete on New's client failed: %w", err)
	}
	if !reflect.DeepEqual(got, want) {
		return broke(ruleStreamSameReply, "Stream returned %s, Complete %s", cutJSON(got), cutJSON(want))
	}
	return nil
}

// lateWindow bounds how long NoDeltasAfterReturn waits, after Stream
// returned, for the goroutines the call started to end (an HTTP client's
// idle connections do not).
const lateWindow = 250 * time.Millisecond

func checkNoDeltasAfterReturn(e *env, h StreamingClientHarness) error {
	client := h.New(e.t)
	base := goroutineBaseline()
	_, rec, err := stream(e.ctx, client, h.request(0))
	if err != nil {
		return broke(ruleModelAnswers, "Stream on New's client failed: %w", err)
	}
	settle(base, lateWindow)
	return rec.problems()
}

// settle waits until the goroutines not in base have ended, or within has
// passed.
func settle(base goroutineSet, within time.Duration) {
	deadline := time.Now().Add(within)
	for len(newGoroutines(base, liveGoroutines())) > 0 && time.Now().Before(deadline) {
		time.Sleep(pollEvery)
	}
}

func checkSupersededBeforeRetry(e *env, h StreamingClientHarness) error {
	if h.NewRetried == nil {
		return skipf("the harness has no NewRetried client, so no attempt can be retried")
	}
	reply, rec, err := stream(e.ctx, h.NewRetried(e.t), h.request(1))
	if err != nil {
		return broke(ruleModelAnswers, "Stream on NewRetried's client failed (it must succeed on its retry): %w", err)
	}
	accepted, attempts, err := checkDeltas(rec.all())
	if err != nil {
		return err
	}
	if attempts < 2 {
		return errors.New("polylooptest: NewRetried's call delivered deltas of one attempt only: the harness must fail the first attempt after its deltas")
	}
	return errors.Join(rec.problems(), concatenates(accepted, reply))
}

func checkFailureMidStream(e *env, h StreamingClientHarness) error {
	if h.NewBroken == nil {
		return skipf("the harness has no NewBroken client, so no stream can fail part-way")
	}
	reply, rec, err := stream(e.ctx, h.NewBroken(e.t), h.request(0))
	switch {
	case err == nil:
		return broke(ruleFailureIsError, "a stream that failed part-way returned a nil error (reply %s)", cutJSON(reply))
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return broke(ruleFailureNotCancelled, "the failed stream's error %q matches a context error", err)
	}
	deltas := rec.all()
	if len(deltas) == 0 {
		return errors.New("polylooptest: NewBroken's stream delivered no delta before failing: the harness must fail after some")
	}
	if _, _, err := checkDeltas(deltas); err != nil {
		return err
	}
	if h.BrokenUsage {
		var uc polyloop.UsageCarrier
		if !errors.As(err, &uc) || uc.CallUsage().Tokens() == 0 {
			return broke(ruleStreamUsageKept, "the stream reported usage before failing, but its error %q carries none", err)
		}
	}
	return rec.problems()
}

func checkStreamCancelledContext(e *env, h StreamingClientHarness) error {
	client := h.New(e.t)
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	var rec *deltaRecorder
	err := returnsPromptly(e, func() error {
		var err error
		_, rec, err = stream(ctx, client, h.request(0))
		return err
	})
	if err := cancelError(err, ctx.Err(), "Stream with a done context"); err != nil {
		return err
	}
	return rec.problems()
}

func checkStreamCancelInFlight(e *env, h StreamingClientHarness) error {
	if h.NewHanging == nil {
		return skipf("the harness has no NewHanging client, so a stream cannot be held in flight")
	}
	client := h.NewHanging(e.t)
	base := goroutineBaseline()
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	type result struct {
		rec *deltaRecorder
		err error
	}
	rec := newRecorder()
	res := make(chan result, 1)
	go func() {
		_, err := client.Stream(ctx, h.request(0), rec.deliver)
		rec.mu.Lock()
		rec.returned = true
		rec.mu.Unlock()
		res <- result{rec, err}
	}()
	select {
	case r := <-res:
		return errors.Join(fmt.Errorf("polylooptest: NewHanging's stream returned (error %v) before delivering a delta: the harness must deliver deltas, then block", r.err), r.rec.problems())
	case <-rec.first:
	}
	cancel()
	var err error
	select {
	case r := <-res:
		err = r.err
	case <-time.After(e.cancelWithin):
		err = &lateError{within: e.cancelWithin}
	}
	if err := cancelError(err, ctx.Err(), "Stream in flight"); err != nil {
		return err
	}
	return errors.Join(leaked(base, "Stream in flight"), rec.problems())
}
