package provider

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// roundTrip is a transport of its own, not net/http's.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// An attempt counts as sent when net/http wrote its request, or when the
// transport does not report its writes (nothing then says it was not sent);
// a refused connection, or a request the middleware never saw, was not
// sent.
func TestExchangeSent(t *testing.T) {
	t.Parallel()
	dropped := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack() // the request was read: drop it unanswered
		if err == nil {
			conn.Close()
		}
	}))
	defer dropped.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/v1/x"
	l.Close()
	opaque := roundTrip(func(*http.Request) (*http.Response, error) { return nil, errors.New("opaque transport failed") })
	for _, tc := range []struct {
		name   string
		url    string
		client *http.Client
		want   bool
	}{
		{"refused connection", closed, &http.Client{}, false},
		{"dropped after the request", dropped.URL + "/v1/x", &http.Client{}, true},
		{"a transport that reports nothing", "http://model.test/v1/x", &http.Client{Transport: opaque}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := streamCaller().exchange(context.Background(), 1, nil)
			req, _ := http.NewRequest(http.MethodPost, tc.url, strings.NewReader(`{"model":"m"}`))
			_, err := x.Middleware(req, tc.client.Do)
			if err == nil {
				t.Fatal("the attempt did not fail")
			}
			if got := x.sent(); got != tc.want {
				t.Errorf("sent() = %v, want %v (err %v)", got, tc.want, err)
			}
		})
	}
	if x := streamCaller().exchange(context.Background(), 1, nil); x.sent() {
		t.Error("an attempt the middleware never saw (the SDK refused the request) counts as sent")
	}
}
