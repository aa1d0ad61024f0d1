package polylooptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// ModelClientHarness tells TestModelClient how to drive a ModelClient.
// Only New is required; every check that needs a missing field is skipped
// with the reason logged.
type ModelClientHarness struct {
	// New returns a fresh client whose calls succeed (for an HTTP client:
	// one pointed at an httptest server that answers well). It is called
	// once or more per subtest, from a goroutine other than the test's: use
	// t.Cleanup to release what it holds.
	New func(t testing.TB) polyloop.ModelClient
	// Request is sent for a successful call. The zero value means
	// DefaultRequest().
	Request polyloop.ModelRequest
	// Failing names failure modes ("http_500", "malformed_body",
	// "connection_refused", ...) and gives for each a factory of clients
	// whose every call fails that way. Empty: the FailureIsError check is
	// skipped.
	Failing map[string]func(t testing.TB) polyloop.ModelClient
	// NewHanging returns a client whose call blocks until its context is
	// done (for an HTTP client: a server whose handler waits for the
	// request's context). Nil: the in-flight cancellation checks are skipped.
	NewHanging func(t testing.TB) polyloop.ModelClient
	// Refusing names replies the client receives and cannot accept (a
	// completion without choices, arguments beyond the log's limits), each
	// with a factory of clients whose every call gets that reply and the
	// usage the reply reports. Empty: the RefusedKeepsUsage check is
	// skipped.
	Refusing map[string]RefusedReply
	// Skip names checks the implementation cannot honour, each with the
	// reason logged when it is skipped, e.g.
	// {"ModelID": "llama.cpp does not report a model id"}. A name that is no
	// check of the suite fails the suite.
	Skip map[string]string
	// Timeout is the watchdog of each subtest (DefaultTimeout when zero).
	Timeout time.Duration
	// CancelWithin is how soon a call must return once its context is done
	// (DefaultCancelWithin when zero).
	CancelWithin time.Duration
}

// RefusedReply is a reply a client receives and refuses (see
// ModelClientHarness.Refusing).
type RefusedReply struct {
	// New returns a client whose every call receives the reply.
	New func(t testing.TB) polyloop.ModelClient
	// Usage is what the reply reports: the input and output tokens the
	// call's error must carry and, when CostUSD is set, its cost.
	Usage polyloop.Usage
}

// DefaultRequest is the request TestModelClient sends when the harness gives
// none: a system prompt and a short user message, step 1.
func DefaultRequest() polyloop.ModelRequest {
	return polyloop.ModelRequest{
		RunID:  "polylooptest-run",
		Step:   1,
		CallID: "polylooptest-run/m1.1",
		Messages: []polyloop.Message{
			{Role: polyloop.RoleSystem, Content: "You are a test fixture. Answer briefly."},
			{Role: polyloop.RoleUser, Content: "Say hello."},
		},
		Params: polyloop.ModelParams{MaxOutputTokens: 16},
	}
}

// TestModelClient checks that the clients made by h honour the ModelClient
// contract. Run it with -race, from a test that is not parallel with others
// (the leak checks see the process's goroutines).
//
// The checks (subtest names, usable as keys of h.Skip):
//   - Completes: a call of New's client succeeds.
//   - Usage: the reply reports token usage; a known cost is a finite,
//     non-negative number.
//   - ModelID: the reply names the provider's model.
//   - Attempts: the reply reports 1 to Params.Retries+1 attempts.
//   - RequestNotModified: Complete leaves the request as it was.
//   - CancelledContext: a call with a cancelled context, and one with an
//     expired deadline, return promptly an error that errors.Is the
//     context's error, leaking no goroutine.
//   - CancelInFlight, DeadlineInFlight: a call blocked in NewHanging's
//     client returns promptly once its context is cancelled or its deadline
//     passes, with an error that errors.Is the context's error, leaking no
//     goroutine.
//   - FailureIsError: each of h.Failing's clients returns a non-nil error
//     (never an empty reply), and not one that looks like a cancellation.
//   - Concurrent: concurrent calls on one client all succeed.
//   - RefusedKeepsUsage: each of h.Refusing's clients returns an error that
//     carries the refused reply's usage (polyloop.UsageCarrier in its
//     chain): the same input and output tokens and, when the harness gives
//     one, the same cost. A billed call the client refuses is never free.
func TestModelClient(t *testing.T, h ModelClientHarness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("polylooptest: ModelClientHarness.New is required")
	}
	runSuite(t, "ModelClient", h, newSettings(h.Timeout, h.CancelWithin, h.Skip), modelChecks)
}

var modelChecks = []check[ModelClientHarness]{
	{"Completes", checkModelCompletes},
	{"Usage", checkModelUsage},
	{"ModelID", checkModelID},
	{"Attempts", checkModelAttempts},
	{"RequestNotModified", checkModelRequestNotModified},
	{"CancelledContext", checkModelCancelledContext},
	{"CancelInFlight", checkModelCancelInFlight},
	{"DeadlineInFlight", checkModelDeadlineInFlight},
	{"FailureIsError", checkModelFailureIsError},
	{"Concurrent", checkModelConcurrent},
	{"RefusedKeepsUsage", checkModelRefusedKeepsUsage},
}

func (h ModelClientHarness) request() polyloop.ModelRequest {
	if len(h.Request.Messages) == 0 {
		return DefaultRequest()
	}
	return h.Request
}

// complete makes one successful call and returns the reply.
func complete(e *env, h ModelClientHarness) (polyloop.ModelReply, error) {
	reply, err := h.New(e.t).Complete(e.ctx, h.request())
	if err != nil {
		return reply, broke(ruleModelAnswers, "Complete on New's client failed: %w", err)
	}
	return reply, nil
}

func checkModelCompletes(e *env, h ModelClientHarness) error {
	_, err := complete(e, h)
	return err
}

func checkModelUsage(e *env, h ModelClientHarness) error {
	reply, err := complete(e, h)
	if err != nil {
		return err
	}
	u := reply.Usage
	if u.InputTokens < 0 || u.OutputTokens < 0 || u.CachedTokens < 0 || u.ReasoningTokens < 0 {
		return broke(ruleModelUsage, "negative token counts in usage %+v", u)
	}
	if u.Tokens() == 0 {
		return broke(ruleModelUsage, "reply reports no token usage (input and output tokens are 0); a client must report usage")
	}
	if c := u.CostUSD; c != nil && (math.IsNaN(*c) || math.IsInf(*c, 0) || *c < 0) {
		return broke(ruleModelUsage, "reply reports cost %v: a known cost is finite and non-negative (nil means unknown)", *c)
	}
	return nil
}

func checkModelID(e *env, h ModelClientHarness) error {
	reply, err := complete(e, h)
	if err != nil {
		return err
	}
	if reply.Model == "" {
		return broke(ruleModelID, "reply has no model id (ModelReply.Model is empty)")
	}
	return nil
}

func checkModelAttempts(e *env, h ModelClientHarness) error {
	reply, err := complete(e, h)
	if err != nil {
		return err
	}
	max := h.request().Params.Retries + 1
	if reply.Attempts < 1 || reply.Attempts > max {
		return broke(ruleModelAttempts, "reply reports %d attempts; want 1 to %d (Params.Retries+1)", reply.Attempts, max)
	}
	return nil
}

func checkModelRequestNotModified(e *env, h ModelClientHarness) error {
	req := h.request()
	before, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("harness request does not encode: %v", err)
	}
	if _, err := h.New(e.t).Complete(e.ctx, req); err != nil {
		return broke(ruleModelAnswers, "Complete on New's client failed: %w", err)
	}
	after, _ := json.Marshal(req)
	if string(before) != string(after) {
		return broke(ruleRequestNotModified, "Complete modified the request it was given:\nbefore %s\nafter  %s", cut(before), cut(after))
	}
	return nil
}

func checkModelCancelledContext(e *env, h ModelClientHarness) error {
	client := h.New(e.t)
	cancelled, cancel := context.WithCancel(e.ctx)
	cancel()
	expired, cancel2 := context.WithDeadline(e.ctx, time.Now().Add(-time.Second))
	defer cancel2()
	for _, ctx := range []context.Context{cancelled, expired} {
		base := goroutineBaseline()
		err := returnsPromptly(e, func() error {
			_, err := client.Complete(ctx, h.request())
			return err
		})
		if err := cancelError(err, ctx.Err(), "Complete with a done context"); err != nil {
			return err
		}
		if err := leaked(base, "Complete with a done context"); err != nil {
			return err
		}
	}
	return nil
}

func checkModelCancelInFlight(e *env, h ModelClientHarness) error {
	if h.NewHanging == nil {
		return skipf("the harness has no NewHanging client, so a call cannot be held in flight")
	}
	client := h.NewHanging(e.t)
	return inFlight(e, "Complete", func(ctx context.Context) error {
		_, err := client.Complete(ctx, h.request())
		return err
	}, false)
}

func checkModelDeadlineInFlight(e *env, h ModelClientHarness) error {
	if h.NewHanging == nil {
		return skipf("the harness has no NewHanging client, so a call cannot be held in flight")
	}
	client := h.NewHanging(e.t)
	return inFlight(e, "Complete", func(ctx context.Context) error {
		_, err := client.Complete(ctx, h.request())
		return err
	}, true)
}

func checkModelFailureIsError(e *env, h ModelClientHarness) error {
	if len(h.Failing) == 0 {
		return skipf("the harness gives no Failing clients, so no failure can be provoked")
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(h.Failing)) {
		reply, err := h.Failing[name](e.t).Complete(e.ctx, h.request())
		switch {
		case err == nil:
			errs = append(errs, broke(ruleFailureIsError, "failure %q: Complete returned a nil error (reply %s); a failure must be an error, never an empty reply", name, cutJSON(reply)))
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			errs = append(errs, broke(ruleFailureNotCancelled, "failure %q: the error %q matches a context error, so the library would take a provider failure for a cancellation", name, err))
		}
	}
	return errors.Join(errs...)
}

func checkModelConcurrent(e *env, h ModelClientHarness) error {
	client := h.New(e.t)
	const workers, calls = 8, 2
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range calls {
				if _, err := client.Complete(e.ctx, h.request()); err != nil {
					errs[w] = broke(ruleConcurrentUse, "concurrent call failed: %w", err)
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func checkModelRefusedKeepsUsage(e *env, h ModelClientHarness) error {
	if len(h.Refusing) == 0 {
		return skipf("the harness gives no Refusing clients, so no reply can be refused")
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(h.Refusing)) {
		want := h.Refusing[name].Usage
		_, err := h.Refusing[name].New(e.t).Complete(e.ctx, h.request())
		if err == nil {
			errs = append(errs, broke(ruleFailureIsError, "refused reply %q: Complete returned a nil error", name))
			continue
		}
		var uc polyloop.UsageCarrier
		if !errors.As(err, &uc) {
			errs = append(errs, broke(ruleRefusedKeepsUsage, "refused reply %q: the error %q carries no usage (no polyloop.UsageCarrier in its chain)", name, err))
			continue
		}
		got := uc.CallUsage()
		if got.InputTokens != want.InputTokens || got.OutputTokens != want.OutputTokens {
			errs = append(errs, broke(ruleRefusedKeepsUsage, "refused reply %q: the error carries %d input and %d output tokens; the reply reported %d and %d",
				name, got.InputTokens, got.OutputTokens, want.InputTokens, want.OutputTokens))
		}
		if want.CostUSD != nil && (got.CostUSD == nil || math.Abs(*got.CostUSD-*want.CostUSD) > 1e-9*max(1, *want.CostUSD)) {
			errs = append(errs, broke(ruleRefusedKeepsUsage, "refused reply %q: the error carries cost %s; the reply cost %g USD", name, costText(got.CostUSD), *want.CostUSD))
		}
	}
	return errors.Join(errs...)
}

func costText(c *float64) string {
	if c == nil {
		return "unknown"
	}
	return fmt.Sprintf("%g USD", *c)
}
