package openaimodel

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// BenchmarkConnections measures the connections a client opens: calls from
// 32 goroutines at once (the concurrency of issue 36's sweep) to a local
// server that answers after 20 ms, counting the connections it accepts.
// Each goroutine pauses 2 ms between its calls, as a run does between two
// model calls (its commits and its action): a connection that comes back
// while no call waits for one goes to the idle pool, or is closed when the
// pool is full.
// "pool" is the client as New builds it with Connections 32; "default" is
// the same client on http.DefaultTransport, which keeps 2 idle connections
// per host (what New used before). Reported: connections per 1,000 calls.
//
//	go test -run '^$' -bench Connections -benchtime 2000x ./openaimodel
func BenchmarkConnections(b *testing.B) {
	const concurrency = 32
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"pool", Options{Connections: concurrency}},
		{"default", Options{HTTPClient: &http.Client{}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			srv, conns := countingServer(b, 20*time.Millisecond)
			opts := tc.opts
			opts.BaseURL, opts.APIKey, opts.Model = srv.URL+"/v1/", "test-key", "gpt-4o"
			c, err := New(opts)
			if err != nil {
				b.Fatal(err)
			}
			req := polyloop.ModelRequest{Messages: []polyloop.Message{{Role: polyloop.RoleUser, Content: "Hi"}}}
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range concurrency {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						if _, err := c.Complete(context.Background(), req); err != nil {
							b.Error(err)
							return
						}
						time.Sleep(2 * time.Millisecond)
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(conns.Load())*1000/float64(b.N), "conns/1000calls")
		})
	}
}

// countingServer answers every request with text.json after delay and
// counts the connections it accepts.
func countingServer(b *testing.B, delay time.Duration) (*httptest.Server, *atomic.Int64) {
	body, err := os.ReadFile(filepath.Join("testdata", "responses", "text.json"))
	if err != nil {
		b.Fatal(err)
	}
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "%s", body)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	b.Cleanup(srv.Close)
	return srv, &conns
}
