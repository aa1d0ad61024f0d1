package polylooptest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// brokenModel breaks goodModel in one way, chosen by its fields.
type brokenModel struct {
	noUsage, noModel, noAttempts, modifies, ignoresCtx, busy bool
	mu                                                       sync.Mutex
}

func (m *brokenModel) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	if m.busy {
		if !m.mu.TryLock() {
			return polyloop.ModelReply{}, errors.New("brokenModel: busy")
		}
		defer m.mu.Unlock()
		spin()
	}
	if m.modifies {
		req.Messages[0].Content = "rewritten"
	}
	if ctx.Err() != nil && !m.ignoresCtx {
		return polyloop.ModelReply{}, ctx.Err()
	}
	r := polyloop.ModelReply{Text: "hi", Usage: polyloop.Usage{InputTokens: 3, OutputTokens: 1}, Model: "b", Attempts: 1}
	if m.noUsage {
		r.Usage = polyloop.Usage{}
	}
	if m.noModel {
		r.Model = ""
	}
	if m.noAttempts {
		r.Attempts = 0
	}
	return r, nil
}

// hangingModel blocks until its context is done, then returns end(ctx),
// after starting a goroutine that lives until the test ends when leak is
// set.
type hangingModel struct {
	end  func(ctx context.Context) error
	leak chan struct{}
}

func (m *hangingModel) Complete(ctx context.Context, _ polyloop.ModelRequest) (polyloop.ModelReply, error) {
	if m.leak != nil {
		go func() { <-m.leak }()
	}
	<-ctx.Done()
	return polyloop.ModelReply{}, m.end(ctx)
}

func modelWith(f func(h *ModelClientHarness)) ModelClientHarness {
	h := goodModelHarness()
	f(&h)
	return h
}

func newModel(m polyloop.ModelClient) func(testing.TB) polyloop.ModelClient {
	return func(testing.TB) polyloop.ModelClient { return m }
}

func brokenModelCases() []brokenCase {
	c := func(check string, r rule, h ModelClientHarness) brokenCase {
		return brokenCase{"ModelClient", check, r, func(t *testing.T) outcome { return runNamed(t, modelChecks, check, h, h.settings()) }}
	}
	failing := &FaultyModel{Model: goodModel{}, FailOn: 1}
	return []brokenCase{
		c("Completes", ruleModelAnswers, modelWith(func(h *ModelClientHarness) { h.New = newModel(failing) })),
		c("Usage", ruleModelUsage, modelWith(func(h *ModelClientHarness) { h.New = newModel(&brokenModel{noUsage: true}) })),
		c("ModelID", ruleModelID, modelWith(func(h *ModelClientHarness) { h.New = newModel(&brokenModel{noModel: true}) })),
		c("Attempts", ruleModelAttempts, modelWith(func(h *ModelClientHarness) { h.New = newModel(&brokenModel{noAttempts: true}) })),
		c("RequestNotModified", ruleRequestNotModified, modelWith(func(h *ModelClientHarness) { h.New = newModel(&brokenModel{modifies: true}) })),
		c("CancelledContext", ruleCancelError, modelWith(func(h *ModelClientHarness) { h.New = newModel(&brokenModel{ignoresCtx: true}) })),
		c("CancelInFlight", ruleCancelError, modelWith(func(h *ModelClientHarness) {
			h.NewHanging = newModel(&hangingModel{end: func(context.Context) error { return errors.New("stopped") }})
		})),
		c("CancelInFlight", ruleNoGoroutineLeak, modelWith(func(h *ModelClientHarness) {
			h.NewHanging = func(t testing.TB) polyloop.ModelClient {
				leak := make(chan struct{})
				t.Cleanup(func() { close(leak) })
				return &hangingModel{end: func(ctx context.Context) error { return ctx.Err() }, leak: leak}
			}
		})),
		c("CancelInFlight", ruleCancelPromptly, modelWith(func(h *ModelClientHarness) {
			h.CancelWithin = 20 * time.Millisecond
			h.NewHanging = newModel(&hangingModel{end: func(ctx context.Context) error {
				time.Sleep(200 * time.Millisecond) // releases its connection slowly
				return ctx.Err()
			}})
		})),
		c("DeadlineInFlight", ruleCancelError, modelWith(func(h *ModelClientHarness) {
			h.NewHanging = newModel(&hangingModel{end: func(context.Context) error { return context.Canceled }})
		})),
		c("FailureIsError", ruleFailureIsError, modelWith(func(h *ModelClientHarness) {
			h.Failing = map[string]func(testing.TB) polyloop.ModelClient{"empty reply": newModel(goodModel{})}
		})),
		c("FailureIsError", ruleFailureNotCancelled, modelWith(func(h *ModelClientHarness) {
			h.Failing = map[string]func(testing.TB) polyloop.ModelClient{
				"looks cancelled": newModel(&FaultyModel{Model: goodModel{}, FailOn: 1, Err: context.Canceled}),
			}
		})),
		c("Concurrent", ruleConcurrentUse, modelWith(func(h *ModelClientHarness) { h.New = newModel(&brokenModel{busy: true}) })),
		c("RefusedKeepsUsage", ruleRefusedKeepsUsage, modelWith(func(h *ModelClientHarness) {
			h.Refusing = map[string]RefusedReply{"no usage": {New: newModel(refusingModel{}), Usage: refusedUsage()}}
		})),
		c("RefusedKeepsUsage", ruleRefusedKeepsUsage, modelWith(func(h *ModelClientHarness) {
			h.Refusing = map[string]RefusedReply{"wrong usage": {New: newModel(refusingModel{carries: true, wrong: true}), Usage: refusedUsage()}}
		})),
		c("RefusedKeepsUsage", ruleRefusedKeepsUsage, modelWith(func(h *ModelClientHarness) {
			h.Refusing = map[string]RefusedReply{"cost dropped": {New: newModel(refusingModel{carries: true, noCost: true}), Usage: refusedUsage()}}
		})),
		c("RefusedKeepsUsage", ruleFailureIsError, modelWith(func(h *ModelClientHarness) {
			h.Refusing = map[string]RefusedReply{"accepted": {New: newModel(goodModel{}), Usage: refusedUsage()}}
		})),
	}
}
