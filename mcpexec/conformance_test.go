package mcpexec_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/mcpexec"
	"github.com/polyloop/polyloop/polylooptest"
)

// connected returns an executor on a fresh in-process server, and the
// server's side of the session.
func connected(tb testing.TB) (*mcpexec.Executor, *mcp.ServerSession) {
	ct, srvT := mcp.NewInMemoryTransports()
	ss, err := newTestServer(&serverState{}).Connect(context.Background(), srvT, nil)
	if err != nil {
		tb.Fatal(err)
	}
	e, err := mcpexec.New(context.Background(), mcpexec.Options{Transport: ct, Identity: "conformance"})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = e.Close()
		_ = ss.Close()
	})
	return e, ss
}

func TestConformance(t *testing.T) {
	polylooptest.TestActionExecutor(t, polylooptest.ExecutorHarness{
		New: func(tb testing.TB) polyloop.ActionExecutor {
			e, _ := connected(tb)
			return e
		},
		NewBrokenEnv: func(tb testing.TB) polyloop.ActionExecutor {
			e, ss := connected(tb)
			_ = ss.Close() // the server goes away
			_ = ss.Wait()
			return e
		},
		Succeeds:    polyloop.Action{CallID: "c1", Tool: "echo", Args: json.RawMessage(`{"text":"hi"}`)},
		Fails:       polyloop.Action{CallID: "c2", Tool: "write", Args: json.RawMessage(`{"Fail":true}`)},
		InvalidArgs: polyloop.Action{CallID: "c3", Tool: "echo", Args: json.RawMessage(`{"text":7}`)},
		Blocks:      polyloop.Action{CallID: "c4", Tool: "slow", Args: json.RawMessage(`{}`)},
	})
}
