package view_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop/internal/runfixture"
	"github.com/polyloop/polyloop/internal/ssetest"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/view"
)

// newServer serves a store filled with runfixture.Populate.
func newServer(t testing.TB, opts view.Options) (*view.Server, *memstore.Store) {
	t.Helper()
	st := memstore.New()
	if opts.Store == nil {
		runfixture.Populate(t, st)
		opts.Store = st
	}
	s, err := view.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, st
}

// get requests a page from a loopback host and returns the status and body.
func get(t testing.TB, h http.Handler, method, target string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(method, "http://127.0.0.1:8686"+target, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

// mustGet requests a page that must answer 200.
func mustGet(t testing.TB, h http.Handler, target string) string {
	t.Helper()
	res, body := get(t, h, http.MethodGet, target)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", target, res.StatusCode, body)
	}
	return body
}

func contains(t testing.TB, page, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("%s lacks %q", page, w)
		}
	}
}

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

// event is one server-sent event.
type event = ssetest.Event

// streamWhile opens an event stream on a real server, calls during once the
// first event has arrived, and returns the events until the stream ends
// (the run finished) or 10 s pass.
func streamWhile(t *testing.T, h http.Handler, target string, during func()) []event {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var events []event
	for e := range sse(t, ctx, srv.URL+target) {
		events = append(events, e)
		if len(events) == 1 && during != nil {
			go during()
		}
	}
	if ctx.Err() != nil {
		t.Errorf("the stream did not end: %d events", len(events))
	}
	return events
}

// sse reads a live stream's events as they come; the channel is closed
// when the stream ends.
func sse(t *testing.T, ctx context.Context, url string) <-chan event {
	t.Helper()
	events, err := ssetest.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

func itoa(n int) string { return strconv.Itoa(n) }

func scriptmodelReply(text string) scriptmodel.Turn { return scriptmodel.Reply(text) }
