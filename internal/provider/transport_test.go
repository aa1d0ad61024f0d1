package provider

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Over TLS, a server that offers HTTP/2 gets HTTP/2 from HTTPClient, and
// once a connection is up, concurrent calls share it as streams. (Calls
// made at once before any connection is up each dial one: the transport
// learns that the server speaks HTTP/2 from the TLS handshake.)
func TestHTTPClientHTTP2(t *testing.T) {
	t.Parallel()
	var conns, http1 atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			http1.Add(1)
		}
		time.Sleep(5 * time.Millisecond)
		_, _ = io.WriteString(w, "{}")
	}))
	srv.EnableHTTP2 = true
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()

	c := HTTPClient(8)
	tr := c.Transport.(*http.Transport)
	defer tr.CloseIdleConnections()
	tr.TLSClientConfig.RootCAs = srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	if !tr.ForceAttemptHTTP2 || tr.MaxIdleConnsPerHost != 8 {
		t.Fatalf("ForceAttemptHTTP2 %v, MaxIdleConnsPerHost %d; want true, 8", tr.ForceAttemptHTTP2, tr.MaxIdleConnsPerHost)
	}
	post := func() error {
		resp, err := c.Post(srv.URL, "application/json", nil)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Body.Close()
	}
	if err := post(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				if err := post(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if http1.Load() != 0 || conns.Load() != 1 {
		t.Fatalf("%d of 81 calls were not HTTP/2, over %d connections; want none, over 1", http1.Load(), conns.Load())
	}
}

// A pool of zero or less is DefaultConnections.
func TestHTTPClientDefault(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, -1} {
		if got := HTTPClient(n).Transport.(*http.Transport).MaxIdleConnsPerHost; got != DefaultConnections {
			t.Errorf("HTTPClient(%d) keeps %d idle connections per host, want %d", n, got, DefaultConnections)
		}
	}
}
