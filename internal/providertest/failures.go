package providertest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/polyloop/polyloop/diag"
	"github.com/polyloop/polyloop/internal/provider"
)

// TestConnectionFailures checks that a body cut short and a refused
// connection are *ConnectionErrors, retried, and never read as a
// cancellation.
func TestConnectionFailures[P provider.Package](t *testing.T, h Harness[P]) {
	cut := Response{Fixture: h.OK.Fixture, CutShort: true}
	t.Run("body cut short is a connection error", func(t *testing.T) {
		t.Parallel()
		srv := h.Serve(t, cut)
		_, err := h.Call(t, h.Client(t, srv.URL()), 0)
		var connErr *provider.ConnectionError[P]
		if !errors.As(err, &connErr) || connErr.Attempts != 1 {
			t.Fatalf("err = %v (%T); want *ConnectionError after 1 attempt", err, err)
		}
	})
	t.Run("body cut short is retried", func(t *testing.T) {
		t.Parallel()
		srv := h.Serve(t, cut, h.OK)
		reply, err := h.Call(t, h.Client(t, srv.URL()), 1)
		if err != nil || reply.Attempts != 2 || reply.Text == "" {
			t.Fatalf("reply %+v, err %v; want the second attempt's reply", reply, err)
		}
	})
	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		_, err := h.Call(t, h.Client(t, ClosedURL(t, h.Endpoint)), 2)
		var connErr *provider.ConnectionError[P]
		if !errors.As(err, &connErr) || connErr.Attempts != 3 {
			t.Fatalf("err = %v (%T); want *ConnectionError after 3 attempts", err, err)
		}
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a refused connection reads as a cancellation: %v", err)
		}
	})
}

// APIErrorCase is an error status the client must turn into want, after
// requests requests with the given retries.
type APIErrorCase[P provider.Package] struct {
	Name     string
	Resp     Response
	Retries  int
	Requests int
	Want     provider.APIError[P]
}

// CheckAPIErrors runs the cases, each against a fresh server.
func CheckAPIErrors[P provider.Package](t *testing.T, h Harness[P], cases []APIErrorCase[P]) {
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			srv := h.Serve(t, tc.Resp)
			reply, err := h.Call(t, h.Client(t, srv.URL()), tc.Retries)
			var apiErr *provider.APIError[P]
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v (%T), reply %+v; want *APIError", err, err, reply)
			}
			if *apiErr != tc.Want {
				t.Errorf("error\n got %+v\nwant %+v", *apiErr, tc.Want)
			}
			if n := srv.Count(); n != tc.Requests {
				t.Errorf("the client made %d requests, want %d", n, tc.Requests)
			}
		})
	}
}

// CheckRetryAfterIsHonoured checks that the retry after first, a 429 that
// asks for a wait of 150ms, waits that long.
func CheckRetryAfterIsHonoured[P provider.Package](t *testing.T, h Harness[P], first Response) {
	srv := h.Serve(t, first, h.OK)
	start := time.Now()
	reply, err := h.Call(t, h.Client(t, srv.URL()), 1)
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed < 150*time.Millisecond {
		t.Errorf("retried after %v, before the server's %v of 150ms", elapsed, first.Header)
	}
	if reply.Attempts != 2 || srv.Count() != 2 {
		t.Errorf("attempts = %d, requests = %d; want 2 and 2", reply.Attempts, srv.Count())
	}
}

// CheckZeroRetriesMeansOneAttempt checks that with no retries a retryable
// status (resp) ends the call after one request: the SDK's own retries are
// off.
func CheckZeroRetriesMeansOneAttempt[P provider.Package](t *testing.T, h Harness[P], resp Response) {
	srv := h.Serve(t, resp, h.OK)
	_, err := h.Call(t, h.Client(t, srv.URL()), 0)
	var apiErr *provider.APIError[P]
	if !errors.As(err, &apiErr) || apiErr.StatusCode != resp.Status || apiErr.Attempts != 1 {
		t.Fatalf("err = %v; want a %d *APIError after 1 attempt", err, resp.Status)
	}
	if srv.Count() != 1 {
		t.Errorf("the client made %d requests with 0 retries (the SDK's own retries must be off)", srv.Count())
	}
}

// CheckResponseError checks that a success status with fixture, whose
// response names request id req_bad, is a *ResponseError after one request
// (it is not retried), and returns it.
func CheckResponseError[P provider.Package](t *testing.T, h Harness[P], fixture string) error {
	t.Helper()
	srv := h.Serve(t, Response{Status: 200, Fixture: fixture, Header: map[string]string{h.RequestIDHeader: "req_bad"}})
	_, err := h.Call(t, h.Client(t, srv.URL()), 2)
	var respErr *provider.ResponseError[P]
	if !errors.As(err, &respErr) {
		t.Fatalf("err = %v (%T); want *ResponseError", err, err)
	}
	if respErr.StatusCode != 200 || respErr.RequestID != "req_bad" || srv.Count() != 1 {
		t.Errorf("got %+v after %d requests; want status 200, request req_bad, 1 request", respErr, srv.Count())
	}
	return err
}

// CheckDiagFields checks the diagnostic fields of the failure resp causes.
func CheckDiagFields[P provider.Package](t *testing.T, h Harness[P], resp Response, want map[string]string) {
	srv := h.Serve(t, resp)
	_, err := h.Call(t, h.Client(t, srv.URL()), 0)
	d := diag.From(err)
	for k, v := range want {
		if d.Fields[k] != v {
			t.Errorf("diagnostic field %s = %q, want %q (all: %v)", k, d.Fields[k], v, d.Fields)
		}
	}
}
