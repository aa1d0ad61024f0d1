package anthropicmodel

import (
	"bytes"
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

// response is one scripted answer of the fake server.
type response struct {
	status  int
	header  map[string]string
	fixture string // file under testdata/responses; "" for an empty body
	// cutShort announces a longer body than it sends, then drops the
	// connection.
	cutShort bool
	// stall holds the request until the client goes away.
	stall bool
}

// received is one request the fake server saw.
type received struct {
	header http.Header
	body   []byte
}

// fakeServer speaks the Messages wire format from fixtures. It
// answers with the scripted responses in order, repeating the last.
type fakeServer struct {
	t   testing.TB
	srv *httptest.Server

	mu        sync.Mutex
	script    []response
	requests  []received
	abandoned chan struct{} // closed when a stalled request's context ends
	once      sync.Once
}

func newFakeServer(t testing.TB, script ...response) *fakeServer {
	t.Helper()
	f := &fakeServer{t: t, script: script, abandoned: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServer) url() string { return f.srv.URL + "/" }

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	n := len(f.requests)
	f.requests = append(f.requests, received{header: r.Header.Clone(), body: body})
	resp := f.script[min(n, len(f.script)-1)]
	f.mu.Unlock()
	if r.URL.Path != "/v1/messages" || r.Method != http.MethodPost {
		http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
		return
	}
	if resp.stall {
		<-r.Context().Done()
		f.once.Do(func() { close(f.abandoned) })
		return
	}
	payload := f.payload(resp.fixture, r)
	for k, v := range resp.header {
		w.Header().Set(k, v)
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	if resp.cutShort {
		f.cut(w, payload)
		return
	}
	w.WriteHeader(resp.status)
	_, _ = w.Write(payload)
}

// payload reads a fixture; {{API_KEY}} becomes the bearer token received,
// the way a provider echoes a key it rejects.
func (f *fakeServer) payload(fixture string, r *http.Request) []byte {
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
func (f *fakeServer) cut(w http.ResponseWriter, payload []byte) {
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

func (f *fakeServer) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func (f *fakeServer) request(i int) received {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[i]
}

// waitAbandoned fails the test unless a stalled request's context ended.
func (f *fakeServer) waitAbandoned(t *testing.T) {
	t.Helper()
	select {
	case <-f.abandoned:
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the request go away: the client did not release it")
	}
}

// closedURL is the base URL of a server that no longer listens.
func closedURL(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/"
}

// prettyJSON indents a JSON body for golden files.
func prettyJSON(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, b)
	}
	out.WriteByte('\n')
	return out.Bytes()
}
