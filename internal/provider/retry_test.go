package provider

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestRetryAfterHeader(t *testing.T) {
	t.Parallel()
	future := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	for _, tc := range []struct {
		header   map[string]string
		min, max time.Duration
	}{
		{map[string]string{}, 0, 0},
		{map[string]string{"Retry-After": "2"}, 2 * time.Second, 2 * time.Second},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond, 500 * time.Millisecond},
		{map[string]string{"retry-after-ms": "120", "Retry-After": "1"}, 120 * time.Millisecond, 120 * time.Millisecond},
		{map[string]string{"Retry-After": future}, 80 * time.Second, 90 * time.Second},
		{map[string]string{"Retry-After": "soon"}, 0, 0},
		{map[string]string{"Retry-After": "-3"}, 0, 0},
		{map[string]string{"Retry-After": "1e300"}, 0, 0},
	} {
		h := http.Header{}
		for k, v := range tc.header {
			h.Set(k, v)
		}
		if got := retryAfter(h); got < tc.min || got > tc.max {
			t.Errorf("retryAfter(%v) = %v, want in [%v, %v]", tc.header, got, tc.min, tc.max)
		}
	}
}

func TestRetryPolicy(t *testing.T) {
	t.Parallel()
	p := retryPolicy{retries: 3, base: 100 * time.Millisecond, maxBackoff: 250 * time.Millisecond, maxRetryAfter: time.Second}
	for _, tc := range []struct {
		name    string
		err     error
		attempt int
		wait    time.Duration
		retry   bool
	}{
		{"first backoff", &APIError[testPkg]{StatusCode: 500}, 1, 100 * time.Millisecond, true},
		{"doubled", &ConnectionError[testPkg]{Err: errors.New("reset")}, 2, 200 * time.Millisecond, true},
		{"capped", &APIError[testPkg]{StatusCode: 503}, 3, 250 * time.Millisecond, true},
		{"retries exhausted", &APIError[testPkg]{StatusCode: 500}, 4, 0, false},
		{"retry-after longer than backoff", &APIError[testPkg]{StatusCode: 429, RetryAfter: 700 * time.Millisecond}, 1, 700 * time.Millisecond, true},
		{"retry-after beyond maximum", &APIError[testPkg]{StatusCode: 429, RetryAfter: 2 * time.Second}, 1, 0, false},
		{"client error", &APIError[testPkg]{StatusCode: 400}, 1, 0, false},
		{"408 is not in the policy", &APIError[testPkg]{StatusCode: 408}, 1, 0, false},
		{"bad response", &ResponseError[testPkg]{Err: errors.New("x")}, 1, 0, false},
		{"other", errors.New("x"), 1, 0, false},
	} {
		wait, retry := p.delay(tc.err, tc.attempt)
		if wait != tc.wait || retry != tc.retry {
			t.Errorf("%s: delay = %v, %v; want %v, %v", tc.name, wait, retry, tc.wait, tc.retry)
		}
	}
	if w, ok := (retryPolicy{retries: 1}).delay(&APIError[testPkg]{StatusCode: 500}, 1); w != 0 || !ok {
		t.Errorf("a zero backoff: delay = %v, %v; want an immediate retry", w, ok)
	}
}

// testPkg instantiates the error types in this package's tests.
type testPkg struct{}

func (testPkg) Name() string { return "provider" }
