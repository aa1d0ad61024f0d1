package providertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/provider"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/toolcallparser"
)

// attemptTimeoutForBilling is the attempt timeout of the billing checks:
// the stalled attempt ends when it passes, whatever the machine's speed (no
// duration is asserted). It also bounds the attempts that must succeed, so
// it leaves room for a loaded machine under -race (at 100 ms a retried
// call's good attempt timed out in CI).
const attemptTimeoutForBilling = 2 * time.Second

// CheckSentAttemptsBilled checks which failed attempts the call counts as
// billed (issue 14, rule 1). An attempt whose request reached the server and
// that then got no answer saying it failed — it timed out waiting, or its
// success body was cut short — may have been billed: the call's cost is
// unknown (a retry's reply has no cost; a failed call's error carries a
// usage of no tokens and no cost, which the totals read as tokens and cost
// unknown), never free. An attempt the server never received (a refused
// connection) or that it answered with an error status is not billed: a
// retry's reply keeps its known cost.
func CheckSentAttemptsBilled[P provider.Package](t *testing.T, h Harness[P]) {
	stalled := Response{Stall: true}
	cut := Response{Fixture: h.OK.Fixture, CutShort: true}
	for _, tc := range []struct {
		name  string
		first Response
	}{{"timed out, then retried", stalled}, {"cut short, then retried", cut}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := h.Serve(t, tc.first, h.OK)
			reply, err := h.timedClient(t, srv.URL()).Complete(context.Background(), h.Request(polyloop.ModelParams{Retries: 1, RetryBackoffMS: 1}))
			if err != nil || reply.Attempts != 2 {
				t.Fatalf("reply %+v, err %v; want the second attempt's reply", reply, err)
			}
			if reply.Usage.CostUSD != nil || reply.Usage.Tokens() == 0 || !reply.Usage.TokensUnknown {
				t.Errorf("usage %+v (cost %v); want the reply's tokens as a lower bound and an unknown cost: the first attempt was sent and may have been billed", reply.Usage, reply.Usage.CostUSD)
			}
			res := h.runBilled(t, tc.first, 1)
			if tt := res.Totals; res.StopReason != polyloop.StopCompleted || !tt.CostUnknown || !tt.TokensUnknown || tt.Tokens() == 0 {
				t.Errorf("run: %s, totals %+v; want completed with the tokens known so far, tokens and cost unknown", res.StopReason, tt)
			}
		})
	}
	t.Run("stream timed out before its first delta, then retried", func(t *testing.T) {
		t.Parallel()
		srv := h.Serve(t, stalled, h.OK)
		reply, deltas, err := collect(streaming(t, h.timedClient(t, srv.URL())), h.Request(polyloop.ModelParams{Retries: 1, RetryBackoffMS: 1}))
		if err != nil || reply.Attempts != 2 || srv.Count() != 2 {
			t.Fatalf("reply %+v, err %v after %d requests; want the second attempt's reply", reply, err, srv.Count())
		}
		if len(deltas) == 0 || deltas[0].Attempt != 2 {
			t.Fatalf("deltas %+v; want the second attempt's only", deltas)
		}
		if reply.Usage.CostUSD != nil || !reply.Usage.TokensUnknown {
			t.Errorf("usage %+v (cost %v); want tokens and cost unknown: the first attempt was sent and may have been billed", reply.Usage, reply.Usage.CostUSD)
		}
	})
	t.Run("timed out, not retried", func(t *testing.T) {
		t.Parallel()
		srv := h.Serve(t, stalled)
		_, err := h.timedClient(t, srv.URL()).Complete(context.Background(), h.Request(polyloop.ModelParams{}))
		var uc polyloop.UsageCarrier
		if !errors.As(err, &uc) || !errors.Is(err, h.ErrAttemptTimeout) {
			t.Fatalf("err = %v; want an attempt timeout that carries a usage (polyloop.UsageCarrier)", err)
		}
		if u := uc.CallUsage(); u.Tokens() != 0 || u.CostUSD != nil {
			t.Errorf("the error carries %+v; want a usage that says nothing (tokens and cost unknown)", u)
		}
		res := h.runBilled(t, stalled, 0)
		if tt := res.Totals; res.StopReason != polyloop.StopLLMError || !tt.TokensUnknown || !tt.CostUnknown {
			t.Errorf("run: %s, totals %+v; want llm_error with tokens and cost unknown", res.StopReason, tt)
		}
	})
	t.Run("error status, then retried", func(t *testing.T) {
		t.Parallel()
		srv := h.Serve(t, h.ErrorStatus, h.OK)
		reply, err := h.timedClient(t, srv.URL()).Complete(context.Background(), h.Request(polyloop.ModelParams{Retries: 1, RetryBackoffMS: 1}))
		if err != nil || reply.Attempts != 2 || reply.Usage.CostUSD == nil {
			t.Fatalf("reply %+v, err %v; want the second attempt's reply with its cost known (an error status is not billed)", reply, err)
		}
	})
	t.Run("refused connection", func(t *testing.T) {
		t.Parallel()
		_, err := h.timedClient(t, ClosedURL(t, h.Endpoint)).Complete(context.Background(), h.Request(polyloop.ModelParams{Retries: 1, RetryBackoffMS: 1}))
		var connErr *provider.ConnectionError[P]
		var uc polyloop.UsageCarrier
		if !errors.As(err, &connErr) || errors.As(err, &uc) {
			t.Fatalf("err = %v; want a *ConnectionError that carries no usage (the server never got the request)", err)
		}
	})
}

// timedClient is a client of baseURL whose attempts time out after
// attemptTimeoutForBilling.
func (h *Harness[P]) timedClient(t testing.TB, baseURL string) Client {
	return h.must(t, Options{BaseURL: baseURL, APIKey: "test-key", Timeout: attemptTimeoutForBilling})
}

// runBilled runs a one-step agent whose model answers first, then the
// harness's OK, with the given retries, and returns the result.
func (h *Harness[P]) runBilled(t *testing.T, first Response, retries int) polyloop.RunResult {
	t.Helper()
	srv := h.Serve(t, first, h.OK)
	r := &polyloop.Runner{Model: h.timedClient(t, srv.URL()), Parser: toolcallparser.New(toolcallparser.Options{}),
		Executor: WeatherExec{Tool: "f"}, Store: memstore.New()}
	agent := polyloop.Agent{Name: "billed", Limits: polyloop.Limits{MaxSteps: 1},
		Model: polyloop.ModelParams{Model: h.Model, Retries: retries, RetryBackoffMS: 1}}
	res, err := r.Run(context.Background(), "billed", agent, polyloop.Task{Input: "go"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}
