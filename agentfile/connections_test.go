package agentfile

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// Options.Connections reaches the remote model clients' HTTP pools: 8
// calls at a time reuse about 8 connections with Connections 8, and open
// one for most calls with Connections 1 (a pool that keeps one).
func TestConnectionsReachTheClient(t *testing.T) {
	t.Parallel()
	for provider, body := range map[string]string{
		"openai": `{"id":"c","object":"chat.completion","created":1,"model":"local","choices":[{"index":0,` +
			`"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`,
		"anthropic": `{"id":"m","type":"message","role":"assistant","model":"local","content":[{"type":"text","text":"hi"}],` +
			`"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`,
	} {
		for _, tc := range []struct {
			connections int
			wantAtMost  bool // at most 16, else more than 16
		}{{8, true}, {1, false}} {
			t.Run(fmt.Sprintf("%s/connections=%d", provider, tc.connections), func(t *testing.T) {
				t.Parallel()
				url, conns := countingServer(t, body)
				src := "name: a\nmodel:\n  provider: " + provider + "\n  model: local\n  base_url: '" + url + "'\n"
				getenv := func(string) string { return "test-key-not-real" }
				cfg, err := Load(context.Background(), writeFile(t, "agent.yaml", src), &Options{Getenv: getenv, Connections: tc.connections})
				if err != nil {
					t.Fatal(err)
				}
				defer cfg.Close()
				var wg sync.WaitGroup
				for range 8 {
					wg.Go(func() {
						for range 20 {
							req := polyloop.ModelRequest{Messages: []polyloop.Message{{Role: polyloop.RoleUser, Content: "hi"}}}
							if _, err := cfg.Model.Complete(context.Background(), req); err != nil {
								t.Error(err)
								return
							}
							time.Sleep(time.Millisecond)
						}
					})
				}
				wg.Wait()
				if got := conns.Load(); (got <= 16) != tc.wantAtMost {
					t.Errorf("Connections %d: 160 calls, 8 at a time, opened %d connections", tc.connections, got)
				}
			})
		}
	}
}

// countingServer answers every request with body and counts the
// connections it accepts; it returns its URL as a base URL.
func countingServer(t *testing.T, body string) (string, *atomic.Int64) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL + "/v1/", &conns
}
