package anthropicmodel

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/polyloop/polyloop/diag"
)

func TestAPIErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		resp     response
		retries  int
		requests int // how many requests the client must make
		want     APIError
	}{
		{
			name: "400 is not retried", retries: 2, requests: 1,
			resp: response{status: 400, fixture: "error_400.json", header: map[string]string{"request-id": "req_011CSHoEeqs5C35K2UUqR7Fy"}},
			want: APIError{StatusCode: 400, Type: "invalid_request_error", RequestID: "req_011CSHoEeqs5C35K2UUqR7Fy", Attempts: 1,
				Message: "messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01. Each `tool_use` block must have a corresponding `tool_result` block in the next message."},
		},
		{
			name: "an error code in the details", retries: 0, requests: 1,
			resp: response{status: 400, fixture: "error_400_code.json"},
			want: APIError{StatusCode: 400, Type: "invalid_request_error", Code: "available_tools_limit_exceeded",
				RequestID: "req_011CSHoEeqs5C35K2UUqR7G3", Attempts: 1,
				Message: "The tools available after this message exceed the limit."},
		},
		{
			name: "401 is not retried", retries: 2, requests: 1,
			resp: response{status: 401, fixture: "error_401.json"},
			want: APIError{StatusCode: 401, Type: "authentication_error", RequestID: "req_011CSHoEeqs5C35K2UUqR7Fz", Attempts: 1,
				Message: "invalid x-api-key: [REDACTED]"},
		},
		{
			name: "500 is retried until the retries run out", retries: 2, requests: 3,
			resp: response{status: 500, fixture: "error_500.json"},
			want: APIError{StatusCode: 500, Type: "api_error", RequestID: "req_011CSHoEeqs5C35K2UUqR7G1", Attempts: 3,
				Message: "Internal server error"},
		},
		{
			name: "529 overloaded is retried", retries: 1, requests: 2,
			resp: response{status: 529, fixture: "error_529.json"},
			want: APIError{StatusCode: 529, Type: "overloaded_error", RequestID: "req_011CSHoEeqs5C35K2UUqR7G2", Attempts: 2,
				Message: "Overloaded"},
		},
		{
			name: "a body that is not JSON", retries: 0, requests: 1,
			resp: response{status: 502, fixture: "error_502.html", header: map[string]string{"Content-Type": "text/html"}},
			want: APIError{StatusCode: 502, Attempts: 1,
				Message: "<html>\n<head><title>502 Bad Gateway</title></head>\n<body><center><h1>502 Bad Gateway</h1></center></body>\n</html>"},
		},
		{
			name: "a Retry-After beyond the maximum ends the retries", retries: 3, requests: 1,
			resp: response{status: 429, fixture: "error_429.json", header: map[string]string{"Retry-After": "3600"}},
			want: APIError{StatusCode: 429, Type: "rate_limit_error", RequestID: "req_011CSHoEeqs5C35K2UUqR7G0", RetryAfter: time.Hour, Attempts: 1,
				Message: "This request would exceed the rate limit for your organization of 50 requests per minute."},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, tc.resp)
			reply, err := call(t, newTestClient(t, srv.url()), tc.retries)
			var apiErr *APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v (%T), reply %+v; want *APIError", err, err, reply)
			}
			if *apiErr != tc.want {
				t.Errorf("error\n got %+v\nwant %+v", *apiErr, tc.want)
			}
			if n := srv.count(); n != tc.requests {
				t.Errorf("the client made %d requests, want %d", n, tc.requests)
			}
		})
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t,
		response{status: 429, fixture: "error_429.json", header: map[string]string{"Retry-After": "0.15"}},
		response{status: 200, fixture: "text.json"})
	start := time.Now()
	reply, err := call(t, newTestClient(t, srv.url()), 1)
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed < 150*time.Millisecond {
		t.Errorf("retried after %v, before the server's Retry-After of 0.15s", elapsed)
	}
	if reply.Attempts != 2 || srv.count() != 2 {
		t.Errorf("attempts = %d, requests = %d; want 2 and 2", reply.Attempts, srv.count())
	}
}

func TestZeroRetriesMeansOneAttempt(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, response{status: 529, fixture: "error_529.json"}, response{status: 200, fixture: "text.json"})
	_, err := call(t, newTestClient(t, srv.url()), 0)
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 529 || apiErr.Attempts != 1 {
		t.Fatalf("err = %v; want a 529 *APIError after 1 attempt", err)
	}
	if srv.count() != 1 {
		t.Errorf("the client made %d requests with 0 retries (the SDK's own retries must be off)", srv.count())
	}
}

func TestUnreadableResponses(t *testing.T) {
	t.Parallel()
	for _, fixture := range []string{"malformed.json", "empty_object.json"} {
		t.Run(fixture, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, response{status: 200, fixture: fixture, header: map[string]string{"request-id": "req_bad"}})
			_, err := call(t, newTestClient(t, srv.url()), 2)
			var respErr *ResponseError
			if !errors.As(err, &respErr) {
				t.Fatalf("err = %v (%T); want *ResponseError", err, err)
			}
			if respErr.StatusCode != 200 || respErr.RequestID != "req_bad" || srv.count() != 1 {
				t.Errorf("got %+v after %d requests; want status 200, request req_bad, 1 request", respErr, srv.count())
			}
		})
	}
}

func TestBodyCutShort(t *testing.T) {
	t.Parallel()
	t.Run("is a connection error", func(t *testing.T) {
		t.Parallel()
		srv := newFakeServer(t, response{fixture: "text.json", cutShort: true})
		_, err := call(t, newTestClient(t, srv.url()), 0)
		var connErr *ConnectionError
		if !errors.As(err, &connErr) || connErr.Attempts != 1 {
			t.Fatalf("err = %v (%T); want *ConnectionError after 1 attempt", err, err)
		}
	})
	t.Run("is retried", func(t *testing.T) {
		t.Parallel()
		srv := newFakeServer(t, response{fixture: "text.json", cutShort: true}, response{status: 200, fixture: "text.json"})
		reply, err := call(t, newTestClient(t, srv.url()), 1)
		if err != nil || reply.Attempts != 2 || reply.Text == "" {
			t.Fatalf("reply %+v, err %v; want the second attempt's reply", reply, err)
		}
	})
}

func TestConnectionRefused(t *testing.T) {
	t.Parallel()
	_, err := call(t, newTestClient(t, closedURL(t)), 2)
	var connErr *ConnectionError
	if !errors.As(err, &connErr) || connErr.Attempts != 3 {
		t.Fatalf("err = %v (%T); want *ConnectionError after 3 attempts", err, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a refused connection reads as a cancellation: %v", err)
	}
}

func TestErrorsDescribeAsFields(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, response{status: 429, fixture: "error_429.json",
		header: map[string]string{"request-id": "req_429", "Retry-After": "2"}})
	_, err := call(t, newTestClient(t, srv.url()), 0)
	d := diag.From(err)
	want := map[string]string{"http_status": "429", "provider_type": "rate_limit_error",
		"request_id": "req_429", "retry_after_ms": "2000", "attempts": "1"}
	for k, v := range want {
		if d.Fields[k] != v {
			t.Errorf("diagnostic field %s = %q, want %q (all: %v)", k, d.Fields[k], v, d.Fields)
		}
	}
}
