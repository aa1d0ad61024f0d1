package providertest

import (
	"context"
	"errors"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/provider"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/toolcallparser"
)

// RefusedCase is a success response the client receives and refuses (a
// completion without choices, arguments beyond the log's limits), with the
// tokens its body reports.
type RefusedCase struct {
	Response                  Response
	InputTokens, OutputTokens int64
}

// CheckRefusedKeepUsage checks that a reply the client receives and refuses
// keeps what it cost (issue 14, rule 2): the call fails, once, with a
// *ResponseError that carries the reply's tokens and their cost
// (polyloop.UsageCarrier), and a run given it finishes llm_error with the
// usage on the failed call's result and in the totals, its cost known. A
// success response whose body cannot be read at all (unreadable, a fixture
// of a body that is not JSON) carries a usage that says nothing: the call
// was answered and may have been billed, so the run's tokens and cost are
// unknown — never free.
func CheckRefusedKeepUsage[P provider.Package](t *testing.T, h Harness[P], cases map[string]RefusedCase, unreadable string) {
	for name, rc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			u := h.refusedUsage(t, rc.Response)
			if u.InputTokens != rc.InputTokens || u.OutputTokens != rc.OutputTokens || u.CostUSD == nil || *u.CostUSD <= 0 {
				t.Fatalf("the error carries %+v (cost %v); want %d input and %d output tokens and their cost", u, u.CostUSD, rc.InputTokens, rc.OutputTokens)
			}
			res, l := h.runOnce(t, rc.Response)
			mr := l.ModelResults()
			if res.StopReason != polyloop.StopLLMError || len(mr) != 1 || mr[0].Failure == nil || mr[0].Usage == nil {
				t.Fatalf("run: %s, results %+v; want llm_error with the failed call's usage", res.StopReason, mr)
			}
			if got := *mr[0].Usage; got.InputTokens != rc.InputTokens || got.OutputTokens != rc.OutputTokens || got.CostUSD == nil || *got.CostUSD != *u.CostUSD {
				t.Errorf("the failed result keeps %+v; want the reply's usage %+v", got, u)
			}
			want := polyloop.Totals{Steps: 0, ModelCalls: 1, InputTokens: rc.InputTokens, OutputTokens: rc.OutputTokens, CostUSD: *u.CostUSD}
			CheckStoredTotals(t, l.Records, func(t *testing.T, got polyloop.Totals) {
				if got != want {
					t.Errorf("stored totals %+v; want %+v (the refused reply counted, its cost known)", got, want)
				}
			})
		})
	}
	t.Run("unreadable", func(t *testing.T) {
		t.Parallel()
		resp := Response{Status: 200, Fixture: unreadable}
		if u := h.refusedUsage(t, resp); u.Tokens() != 0 || u.CostUSD != nil {
			t.Errorf("an unreadable body: the error carries %+v; want a usage that says nothing", u)
		}
		res, _ := h.runOnce(t, resp)
		if tt := res.Totals; tt.ModelCalls != 1 || !tt.TokensUnknown || !tt.CostUnknown || tt.Tokens() != 0 {
			t.Errorf("an unreadable body: totals %+v; want tokens and cost unknown", tt)
		}
	})
}

// refusedUsage calls a server answering resp (with retries allowed: a
// refused reply is not retried) and returns the usage its error carries.
func (h *Harness[P]) refusedUsage(t *testing.T, resp Response) polyloop.Usage {
	t.Helper()
	srv := h.Serve(t, resp)
	_, err := h.Call(t, h.Client(t, srv.URL()), 2)
	var re *provider.ResponseError[P]
	if !errors.As(err, &re) || srv.Count() != 1 {
		t.Fatalf("%v after %d requests; want a *ResponseError, not retried", err, srv.Count())
	}
	var uc polyloop.UsageCarrier
	if !errors.As(err, &uc) {
		t.Fatalf("the error %v carries no usage (no polyloop.UsageCarrier)", err)
	}
	return uc.CallUsage()
}

// runOnce runs a one-tool agent whose model answers resp, then the
// harness's OK; it returns the result and the log.
func (h *Harness[P]) runOnce(t *testing.T, resp Response) (polyloop.RunResult, polyloop.RunLog) {
	t.Helper()
	srv := h.Serve(t, resp, h.OK)
	store := memstore.New()
	r := &polyloop.Runner{Model: h.Client(t, srv.URL()), Parser: toolcallparser.New(toolcallparser.Options{}),
		Executor: WeatherExec{Tool: "f"}, Store: store}
	agent := polyloop.Agent{Name: "refused", Tools: []polyloop.ToolSpec{{Name: "f", Replay: polyloop.ReplaySafe}},
		Limits: polyloop.Limits{MaxSteps: 3}, Model: polyloop.ModelParams{Model: h.Model}}
	res, err := r.Run(context.Background(), "refused", agent, polyloop.Task{Input: "go"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	l, err := polyloop.ReadLog(context.Background(), store, "refused")
	if err != nil {
		t.Fatalf("the log does not read back: %v", err)
	}
	return res, l
}
