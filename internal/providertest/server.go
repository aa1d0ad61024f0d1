package providertest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Response is one scripted answer of the fake server.
type Response struct {
	Status int
	Header map[string]string
	// Fixture is a file under testdata/responses; "" for an empty body.
	Fixture string
	// Body, when set, is the body instead of a fixture.
	Body []byte
	// CutShort announces a longer body than it sends, then drops the
	// connection.
	CutShort bool
	// Stall holds the request until the client goes away.
	Stall bool
	// SSE is a fixture of server-sent events under testdata/responses,
	// events separated by blank lines, sent one at a time (each flushed)
	// with status 200 (or Status) when the request asks for a stream (its
	// body has "stream": true). A streamed request to a response without
	// SSE gets the response as a call of Complete would.
	SSE string
	// CutAfter > 0 drops the connection after that many events of SSE,
	// without ending the response.
	CutAfter int
	// StallAfter > 0 holds the stream after that many events of SSE until
	// the client goes away.
	StallAfter int
}

// Received is one request the fake server saw.
type Received struct {
	Header http.Header
	Body   []byte
}

// Endpoint is where a client's API lives on the fake server.
type Endpoint struct {
	// Base is the base URL's path, given to the client after the server's
	// address ("/v1/").
	Base string
	// Path is the path the client posts its requests to
	// ("/v1/chat/completions").
	Path string
}

// Server speaks a provider's wire format from fixtures. It answers with the
// scripted responses in order, repeating the last.
type Server struct {
	t   testing.TB
	ep  Endpoint
	srv *httptest.Server

	mu        sync.Mutex
	script    []Response
	requests  []Received
	abandoned chan struct{} // closed when a stalled request's context ends
	once      sync.Once
	conns     int // connections accepted
}

// NewServer starts a server answering with script; it is closed when the
// test ends.
func NewServer(t testing.TB, ep Endpoint, script ...Response) *Server {
	t.Helper()
	f := &Server{t: t, ep: ep, script: script, abandoned: make(chan struct{})}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	f.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			f.mu.Lock()
			f.conns++
			f.mu.Unlock()
		}
	}
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	return f
}

// Connections is the number of connections the server has accepted.
func (f *Server) Connections() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conns
}

// URL is the base URL to give the client.
func (f *Server) URL() string { return f.srv.URL + f.ep.Base }

func (f *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	n := len(f.requests)
	f.requests = append(f.requests, Received{Header: r.Header.Clone(), Body: body})
	resp := f.script[min(n, len(f.script)-1)]
	f.mu.Unlock()
	if r.URL.Path != f.ep.Path || r.Method != http.MethodPost {
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	if resp.Stall {
		f.hold(r)
		return
	}
	if resp.SSE != "" && streamed(body) {
		f.stream(w, r, resp)
		return
	}
	payload := resp.Body
	if payload == nil {
		payload = f.payload(resp.Fixture, r)
	}
	for k, v := range resp.Header {
		w.Header().Set(k, v)
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	if resp.CutShort {
		f.cut(w, payload)
		return
	}
	w.WriteHeader(resp.Status)
	_, _ = w.Write(payload)
}

// hold waits until the client goes away from r.
func (f *Server) hold(r *http.Request) {
	<-r.Context().Done()
	f.once.Do(func() { close(f.abandoned) })
}

// streamed reports whether a request body asks for a stream.
func streamed(body []byte) bool {
	var b struct {
		Stream bool `json:"stream"`
	}
	return json.Unmarshal(body, &b) == nil && b.Stream
}

// stream sends resp.SSE event by event, cutting or holding it as resp says.
func (f *Server) stream(w http.ResponseWriter, r *http.Request, resp Response) {
	events := Events(f.payload(resp.SSE, r))
	for k, v := range resp.Header {
		w.Header().Set(k, v)
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "text/event-stream")
	}
	w.WriteHeader(cmp.Or(resp.Status, http.StatusOK))
	flusher := w.(http.Flusher)
	for i, ev := range events {
		switch {
		case resp.CutAfter > 0 && i == resp.CutAfter:
			flusher.Flush()
			panic(http.ErrAbortHandler) // net/http drops the connection, silently
		case resp.StallAfter > 0 && i == resp.StallAfter:
			flusher.Flush()
			f.hold(r)
			return
		}
		_, _ = w.Write(append(ev, "\n\n"...))
		flusher.Flush()
	}
}

// Events splits server-sent events at their blank lines.
func Events(sse []byte) [][]byte {
	var out [][]byte
	for _, ev := range bytes.Split(bytes.ReplaceAll(sse, []byte("\r\n"), []byte("\n")), []byte("\n\n")) {
		if ev = bytes.Trim(ev, "\n"); len(ev) > 0 {
			out = append(out, ev)
		}
	}
	return out
}

// payload reads a fixture; {{API_KEY}} becomes the bearer token received,
// the way a provider echoes a key it rejects.
func (f *Server) payload(fixture string, r *http.Request) []byte {
	if fixture == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join("testdata", "responses", fixture))
	if err != nil {
		f.t.Errorf("fixture: %v", err)
		return nil
	}
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	return bytes.ReplaceAll(b, []byte("{{API_KEY}}"), []byte(key))
}

// cut sends the headers and half the body with a Content-Length for all of
// it, then closes the connection.
func (f *Server) cut(w http.ResponseWriter, payload []byte) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		f.t.Errorf("hijack: %v", err)
		return
	}
	defer conn.Close()
	_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(payload)) + "\r\n\r\n")
	_, _ = buf.Write(payload[:len(payload)/2])
	_ = buf.Flush()
}

// Count is how many requests the server got.
func (f *Server) Count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

// Request is the i-th request the server got.
func (f *Server) Request(i int) Received {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[i]
}

// WaitAbandoned fails the test unless a stalled request's context ended.
func (f *Server) WaitAbandoned(t testing.TB) {
	t.Helper()
	select {
	case <-f.abandoned:
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the request go away: the client did not release it")
	}
}

// ClosedURL is the base URL of a server that no longer listens.
func ClosedURL(t testing.TB, ep Endpoint) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + ep.Base
}

// Client returns an HTTP client that sends every request to this server,
// whatever host the request names: a client configured with its provider's
// real base URL reaches the fake server, and no request leaves the machine.
func (f *Server) Client() *http.Client {
	return &http.Client{Transport: redirect{host: f.srv.Listener.Addr().String()}}
}

// redirect sends requests to host over plain HTTP.
type redirect struct{ host string }

func (r redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host, out.Host = "http", r.host, ""
	return http.DefaultTransport.RoundTrip(out)
}
