package mcpexec_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/mcpexec"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/polylooptest"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/toolcallparser"
)

// newPaymentServer is a payment service as an MCP server: make_payment
// charges once per idempotency key (read from the request's _meta under
// mcpexec.MetaKey; a call without one is refused), lookup_payment answers
// a verdict in the documented shape (polyloop.VerdictJSON) for a key.
func newPaymentServer() *mcp.Server {
	var mu sync.Mutex
	byKey := map[string]string{}
	s := mcp.NewServer(&mcp.Implementation{Name: "payments", Version: "v0.0.1"}, nil)
	observation := func(id string) string { return fmt.Sprintf("charged %s (%d charges in all)", id, len(byKey)) }
	mcp.AddTool(s, &mcp.Tool{Name: "make_payment", Description: "Charges an amount."},
		func(_ context.Context, req *mcp.CallToolRequest, in struct {
			Cents int `json:"cents"`
		}) (*mcp.CallToolResult, any, error) {
			key, _ := req.Params.Meta[mcpexec.MetaKey].(string)
			if key == "" {
				return nil, nil, errors.New("no idempotency key in _meta")
			}
			mu.Lock()
			defer mu.Unlock()
			id, ok := byKey[key]
			if !ok {
				id = fmt.Sprintf("ch_%d", len(byKey)+1)
				byKey[key] = id
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: observation(id)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "lookup_payment", Description: "Finds a charge by its idempotency key."},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Key string `json:"idempotency_key"`
		}) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			defer mu.Unlock()
			id, ok := byKey[in.Key]
			if !ok {
				return nil, map[string]any{"verdict": "not_happened", "said": "no charge under " + in.Key}, nil
			}
			return nil, map[string]any{"verdict": "completed", "observation": observation(id), "said": "found " + id}, nil
		})
	return s
}

func paymentExecutor(t *testing.T) *mcpexec.Executor {
	e := newSubprocess(t, "payments", mcpexec.Options{Tools: []string{"make_payment"},
		Replay: map[string]polyloop.ReplayPolicy{"make_payment": polyloop.NeverReplay}, Reconcile: map[string]string{"make_payment": "lookup_payment"}})
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// The companion tool of a real MCP server over stdio honours the
// Reconciler contract (the kit).
func TestReconcileCompanionConformance(t *testing.T) {
	polylooptest.TestReconciler(t, polylooptest.ReconcilerHarness{
		New:    func(t testing.TB) polyloop.Reconciler { return paymentExecutor(t.(*testing.T)) },
		Action: call("make_payment", `{"cents":100}`),
		Happen: func(t testing.TB, r polyloop.Reconciler, key string) {
			// A run that charges under the key and crashes before its outcome record.
			payUnderKey(t.(*testing.T), r.(*mcpexec.Executor), key)
		},
	})
}

// payUnderKey charges through make_payment under key, as a run would.
func payUnderKey(t *testing.T, e *mcpexec.Executor, key string) {
	out := executeKeyed(t, e, call("make_payment", `{"cents":100}`), key)
	if out.Status != polyloop.Executed {
		t.Fatalf("make_payment: %+v", out)
	}
}

func executeKeyed(t *testing.T, e *mcpexec.Executor, a polyloop.Action, key string) polyloop.ActionOutcome {
	t.Helper()
	out, err := e.Execute(polyloop.WithIdempotencyKey(context.Background(), key), a)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A run that charged through the MCP server and crashed before recording
// the outcome resumes by asking lookup_payment: the outcome adopted is the
// server's, and the payment was made once.
func TestReconcileThroughMCPServer(t *testing.T) {
	e := paymentExecutor(t)
	store := memstore.New()
	model := scriptmodel.New(scriptmodel.Call("c1", "make_payment", map[string]int{"cents": 250}), scriptmodel.Reply("paid"))
	agent := polyloop.Agent{Name: "payer", Limits: polyloop.Limits{MaxSteps: 3}}
	r := &polyloop.Runner{Model: model, Parser: toolcallparser.New(toolcallparser.Options{}), Executor: e,
		Store: &polylooptest.FaultyStore{Store: store, FailAppend: 3}}
	if _, err := r.Run(context.Background(), "mcp-pay", agent, polyloop.Task{Input: "pay"}); err == nil {
		t.Fatal("the run was not killed")
	}
	r.Store = store
	res, err := r.Resume(context.Background(), "mcp-pay", agent)
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != polyloop.StopCompleted || res.Totals.Reconciled.Adopted != 1 {
		t.Fatalf("stop %s, reconciled %+v", res.StopReason, res.Totals.Reconciled)
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "mcp-pay")
	if obs := polyloop.Steps(log)[0].Settled[0].Observation; obs != "charged ch_1 (1 charges in all)" {
		t.Fatalf("adopted outcome %q", obs)
	}
	// A key never used: not happened.
	v, err := e.Reconcile(context.Background(), polyloop.ReconcileQuery{Action: call("make_payment", `{}`), Key: "plk_none"})
	if err != nil || v.Kind != polyloop.VerdictNotHappened {
		t.Fatalf("verdict %+v, %v", v, err)
	}
}
