package openaimodel

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/diag"
)

func call(t *testing.T, c *Client, retries int) (polyloop.ModelReply, error) {
	t.Helper()
	return c.Complete(context.Background(), polyloop.ModelRequest{Messages: userOnly,
		Params: polyloop.ModelParams{Model: "gpt-4o", Retries: retries, RetryBackoffMS: 1}})
}

func newTestClient(t *testing.T, baseURL string) *Client {
	t.Helper()
	c, err := New(Options{BaseURL: baseURL, APIKey: "test-key"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

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
			resp: response{status: 400, fixture: "error_400.json", header: map[string]string{"x-request-id": "req_400"}},
			want: APIError{StatusCode: 400, Type: "invalid_request_error", Param: "messages.[3].role", RequestID: "req_400", Attempts: 1,
				Message: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."},
		},
		{
			name: "401 is not retried", retries: 2, requests: 1,
			resp: response{status: 401, fixture: "error_401.json"},
			want: APIError{StatusCode: 401, Type: "invalid_request_error", Code: "invalid_api_key", Attempts: 1,
				Message: "Incorrect API key provided: [REDACTED]. You can find your API key at https://platform.openai.com/account/api-keys."},
		},
		{
			name: "500 is retried until the retries run out", retries: 2, requests: 3,
			resp: response{status: 500, fixture: "error_500.json"},
			want: APIError{StatusCode: 500, Type: "server_error", Attempts: 3,
				Message: "The server had an error while processing your request. Sorry about that!"},
		},
		{
			name: "a body that is not JSON", retries: 0, requests: 1,
			resp: response{status: 502, fixture: "error_502.html", header: map[string]string{"Content-Type": "text/html"}},
			want: APIError{StatusCode: 502, Attempts: 1,
				Message: "<html>\n<head><title>502 Bad Gateway</title></head>\n<body><center><h1>502 Bad Gateway</h1></center></body>\n</html>"},
		},
		{
			name: "vLLM's error shape", retries: 1, requests: 1,
			resp: response{status: 400, fixture: "error_vllm_400.json"},
			want: APIError{StatusCode: 400, Type: "BadRequestError", Code: "400", Attempts: 1,
				Message: "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens."},
		},
		{
			name: "a Retry-After beyond the maximum ends the retries", retries: 3, requests: 1,
			resp: response{status: 429, fixture: "error_429.json", header: map[string]string{"Retry-After": "3600"}},
			want: APIError{StatusCode: 429, Type: "requests", Code: "rate_limit_exceeded", RetryAfter: time.Hour, Attempts: 1,
				Message: "Rate limit reached for gpt-4o in organization org-xyz on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms."},
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
		response{status: 429, fixture: "error_429.json", header: map[string]string{"retry-after-ms": "150"}},
		response{status: 200, fixture: "text.json"})
	start := time.Now()
	reply, err := call(t, newTestClient(t, srv.url()), 1)
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed < 150*time.Millisecond {
		t.Errorf("retried after %v, before the server's retry-after-ms of 150ms", elapsed)
	}
	if reply.Attempts != 2 || srv.count() != 2 {
		t.Errorf("attempts = %d, requests = %d; want 2 and 2", reply.Attempts, srv.count())
	}
}

func TestZeroRetriesMeansOneAttempt(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, response{status: 503, fixture: "error_500.json"}, response{status: 200, fixture: "text.json"})
	_, err := call(t, newTestClient(t, srv.url()), 0)
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Attempts != 1 {
		t.Fatalf("err = %v; want a 503 *APIError after 1 attempt", err)
	}
	if srv.count() != 1 {
		t.Errorf("the client made %d requests with 0 retries (the SDK's own retries must be off)", srv.count())
	}
}

func TestMalformedJSONIsAResponseError(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, response{status: 200, fixture: "malformed.json", header: map[string]string{"x-request-id": "req_bad"}})
	_, err := call(t, newTestClient(t, srv.url()), 2)
	var respErr *ResponseError
	if !errors.As(err, &respErr) {
		t.Fatalf("err = %v (%T); want *ResponseError", err, err)
	}
	if respErr.StatusCode != 200 || respErr.RequestID != "req_bad" || srv.count() != 1 {
		t.Errorf("got %+v after %d requests; want status 200, request req_bad, 1 request", respErr, srv.count())
	}
}

func TestNoChoicesIsAResponseError(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, response{status: 200, fixture: "empty_object.json"})
	_, err := call(t, newTestClient(t, srv.url()), 0)
	var respErr *ResponseError
	if !errors.As(err, &respErr) || !errors.Is(err, errNoChoices) {
		t.Fatalf("err = %v; want a *ResponseError for a completion without choices", err)
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
		header: map[string]string{"x-request-id": "req_429", "Retry-After": "2"}})
	_, err := call(t, newTestClient(t, srv.url()), 0)
	d := diag.From(err)
	want := map[string]string{"http_status": "429", "provider_type": "requests", "provider_code": "rate_limit_exceeded",
		"request_id": "req_429", "retry_after_ms": "2000", "attempts": "1"}
	for k, v := range want {
		if d.Fields[k] != v {
			t.Errorf("diagnostic field %s = %q, want %q (all: %v)", k, d.Fields[k], v, d.Fields)
		}
	}
}
