package polyloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
)

func pricedUsage(in, out int64, cost float64) *polyloop.Usage {
	return &polyloop.Usage{InputTokens: in, OutputTokens: out, CostUSD: &cost}
}

// A model call of unknown outcome (an intent without its result) may have
// been answered and billed: the run's tokens and cost are then unknown, and
// the sums are only the known part, a lower bound.
func TestUnknownModelCallMakesCostUnknown(t *testing.T) {
	ctx := context.Background()
	model := func() *scriptmodel.Client {
		return scriptmodel.New(scriptmodel.Turn{Text: "done", Usage: pricedUsage(10, 5, 0.25)})
	}
	full := memstore.New()
	if _, err := newRunner(model(), full, newTestExec()).Run(ctx, "r", testAgent(), polyloop.Task{Input: "t"}); err != nil {
		t.Fatal(err)
	}
	// The process died during the model call: run_started and the intent
	// are durable, the result never was.
	log, _ := polyloop.ReadLog(ctx, full, "r")
	crashed := memstore.New()
	crashed.Put("r", log.Records[:2])
	res, err := newRunner(model(), crashed, newTestExec()).Resume(ctx, "r", testAgent())
	if err != nil {
		t.Fatal(err)
	}
	tot := res.Totals
	if tot.UnknownModelCalls != 1 || !tot.TokensUnknown || !tot.CostUnknown {
		t.Fatalf("totals %+v: a call of unknown outcome must make tokens and cost unknown", tot)
	}
	if tot.InputTokens != 10 || tot.OutputTokens != 5 || tot.CostUSD != 0.25 {
		t.Fatalf("totals %+v: the known part is the answered call's", tot)
	}
}

// usageErr is a client error that knows what the failed call consumed.
type usageErr struct{ u polyloop.Usage }

func (e usageErr) Error() string             { return "stream broken after 40 tokens" }
func (e usageErr) CallUsage() polyloop.Usage { return e.u }

// A billed call is never free: a reply the library rejects (arguments that
// are not JSON) and a failed call whose error carries usage keep what they
// consumed on the failed result, and the totals count it.
func TestFailedCallKeepsUsage(t *testing.T) {
	ctx := context.Background()
	cost := 0.5
	for name, turn := range map[string]scriptmodel.Turn{
		"rejected reply": {ToolCalls: []polyloop.ToolCall{{ID: "c", Name: "echo", Args: []byte(`{"text":`)}}, Usage: pricedUsage(30, 10, cost)},
		"usage carrier":  {Err: usageErr{polyloop.Usage{InputTokens: 30, OutputTokens: 10, CostUSD: &cost}}},
	} {
		t.Run(name, func(t *testing.T) {
			store := memstore.New()
			res, err := newRunner(scriptmodel.New(turn), store, newTestExec()).Run(ctx, "r", testAgent(), polyloop.Task{Input: "t"})
			if err != nil || res.StopReason != polyloop.StopLLMError {
				t.Fatalf("%+v, %v", res, err)
			}
			log, _ := polyloop.ReadLog(ctx, store, "r")
			mr := log.ModelResults()[0]
			if mr.Failure == nil || mr.Usage == nil || mr.Usage.Tokens() != 40 {
				t.Fatalf("failed result %+v: usage not kept", mr)
			}
			if tot := res.Totals; tot.Tokens() != 40 || tot.CostUSD != 0.5 || tot.CostUnknown || tot.TokensUnknown {
				t.Fatalf("totals %+v, want the failed call's 40 tokens and $0.5, known", tot)
			}
		})
	}
}

// A failed call without usage is taken as not billed: it adds nothing. Its
// cost is still unknown unless a price is known (another result carried a
// cost): a run of an unpriced model whose only call failed is "cost
// unknown", never $0.
func TestFailedCallWithoutPriceLeavesCostUnknown(t *testing.T) {
	ctx := context.Background()
	fail := scriptmodel.Turn{Err: errors.New("503 Service Unavailable")}
	for _, tc := range []struct {
		name        string
		model       *scriptmodel.Client
		costUnknown bool
		cost        float64
	}{
		{"unpriced, the only call failed", scriptmodel.New(fail), true, 0},
		{"priced: a call with a cost, then one failed", scriptmodel.NewWithOptions(scriptmodel.Options{CostPerToken: 0.5},
			scriptmodel.Turn{ToolCalls: []polyloop.ToolCall{{ID: "c", Name: "echo", Args: []byte(`{"text":"x"}`)}}}, fail), false, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := newRunner(tc.model, memstore.New(), newTestExec()).Run(ctx, "r", testAgent(), polyloop.Task{Input: "t"})
			if err != nil || res.StopReason != polyloop.StopLLMError {
				t.Fatalf("%+v, %v", res, err)
			}
			tot := res.Totals
			if tot.CostUnknown != tc.costUnknown || tot.TokensUnknown || (tc.cost >= 0 && tot.CostUSD != tc.cost) {
				t.Fatalf("totals %+v: want cost unknown %v, tokens known", tot, tc.costUnknown)
			}
		})
	}
}

// A reply that reports no usage at all, or whose usage is only a lower
// bound (Usage.TokensUnknown: an attempt was billed for what it never
// reported), leaves the tokens (and so the cost) unknown; a reply without a
// price leaves the cost unknown.
func TestUsageUnknownFlags(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name          string
		usage         *polyloop.Usage
		tokens, costs bool
	}{
		{"no usage", &polyloop.Usage{}, true, true},
		{"no price", &polyloop.Usage{InputTokens: 5, OutputTokens: 1}, false, true},
		{"priced", pricedUsage(5, 1, 0.1), false, false},
		{"a lower bound", &polyloop.Usage{InputTokens: 5, OutputTokens: 1, TokensUnknown: true}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := newRunner(scriptmodel.New(scriptmodel.Turn{Text: "a", Usage: tc.usage}), memstore.New(), newTestExec()).
				Run(ctx, "r", testAgent(), polyloop.Task{Input: "t"})
			if err != nil {
				t.Fatal(err)
			}
			if res.Totals.TokensUnknown != tc.tokens || res.Totals.CostUnknown != tc.costs {
				t.Fatalf("totals %+v: tokens unknown %v, cost unknown %v wanted", res.Totals, tc.tokens, tc.costs)
			}
		})
	}
}

// A cost budget that cannot be checked — the client knows no price — is
// refused before anything runs, with ErrUncheckableBudget.
func TestUncheckableBudgetRefused(t *testing.T) {
	ctx := context.Background()
	agent := testAgent()
	agent.Limits.MaxCostUSD = 0.000001
	store := memstore.New()
	_, err := newRunner(scriptmodel.New(scriptmodel.Reply("a")), store, newTestExec()).Run(ctx, "r", agent, polyloop.Task{Input: "t"})
	if !errors.Is(err, polyloop.ErrUncheckableBudget) || !errors.Is(err, polyloop.ErrInvalidConfig) {
		t.Fatalf("err = %v, want ErrUncheckableBudget", err)
	}
	if store.Len() != 0 {
		t.Fatal("records written for a refused agent")
	}
	priced := scriptmodel.NewWithOptions(scriptmodel.Options{CostPerToken: 1}, scriptmodel.Reply("a"), scriptmodel.Reply("b"))
	res, err := newRunner(priced, store, newTestExec()).Run(ctx, "r", agent, polyloop.Task{Input: "t"})
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("a priced client: %+v, %v", res, err)
	}
}

// A run cancelled before its first record is durable says so
// (ErrRunNotStarted, with the cancellation), and Run with the same id then
// starts it.
func TestRunNotStarted(t *testing.T) {
	store := memstore.New()
	ctx, cancel := context.WithCancel(context.Background())
	r := newRunner(scriptmodel.New(scriptmodel.Reply("a")), cancelOnRead{store, cancel}, newTestExec())
	_, err := r.Run(ctx, "r", testAgent(), polyloop.Task{Input: "t"})
	if !errors.Is(err, polyloop.ErrRunNotStarted) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want ErrRunNotStarted with the cancellation", err)
	}
	if _, err := newRunner(scriptmodel.New(scriptmodel.Reply("a")), store, newTestExec()).Resume(context.Background(), "r", testAgent()); !errors.Is(err, polyloop.ErrRunNotFound) {
		t.Fatalf("Resume: %v, want ErrRunNotFound", err)
	}
	res, err := newRunner(scriptmodel.New(scriptmodel.Reply("a")), store, newTestExec()).Run(context.Background(), "r", testAgent(), polyloop.Task{Input: "t"})
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("Run again: %+v, %v", res, err)
	}
	// A first Append the store refuses for the log's limits (EncodeBatch:
	// nothing of it is written) leaves nothing either: ErrRunNotStarted,
	// and Run with the same id starts the run.
	deep := &deepDescriber{Client: scriptmodel.New(scriptmodel.Reply("a"))}
	store3 := memstore.New()
	_, err = newRunner(deep, store3, newTestExec()).Run(context.Background(), "q", testAgent(), polyloop.Task{Input: "t"})
	if !errors.Is(err, polyloop.ErrRunNotStarted) || !errors.Is(err, polyloop.ErrJSONLimit) || store3.Len() != 0 {
		t.Fatalf("a first record beyond the limits: %v with %d records; want ErrRunNotStarted with ErrJSONLimit, nothing written", err, store3.Len())
	}
	if _, err := newRunner(deep, store3, newTestExec()).Resume(context.Background(), "q", testAgent()); !errors.Is(err, polyloop.ErrRunNotFound) {
		t.Fatalf("Resume after a refused first write: %v, want ErrRunNotFound", err)
	}
	res, err = newRunner(scriptmodel.New(scriptmodel.Reply("a")), store3, newTestExec()).Run(context.Background(), "q", testAgent(), polyloop.Task{Input: "t"})
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("Run again after a refused first write: %+v, %v", res, err)
	}
	// A cancellation after the first write is not ErrRunNotStarted.
	store2 := memstore.New()
	ctx2, cancel2 := context.WithCancel(context.Background())
	c := &cancelAt{k: 1, cancel: cancel2}
	_, err = newRunner(cancelModel{c, scriptmodel.New(scriptmodel.Reply("a"))}, store2, newTestExec()).Run(ctx2, "s", testAgent(), polyloop.Task{Input: "t"})
	if errors.Is(err, polyloop.ErrRunNotStarted) || store2.Len() == 0 {
		t.Fatalf("err = %v with %d records: the run had started", err, store2.Len())
	}
}

// deepDescriber is a model client whose configuration, in the snapshot,
// nests deeper than a record may: run_started is beyond the log's limits.
type deepDescriber struct{ *scriptmodel.Client }

func (d *deepDescriber) Describe() polyloop.Component {
	n := polyloop.MaxRecordDepth + 1
	return polyloop.Component{Name: "deep", Config: json.RawMessage(strings.Repeat("[", n) + strings.Repeat("]", n))}
}
