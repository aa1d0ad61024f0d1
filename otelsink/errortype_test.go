package otelsink

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/polyloop/polyloop/diag"
)

type fieldsErr struct {
	f   map[string]string
	err error
}

func (e *fieldsErr) Error() string                 { return "provider said no" }
func (e *fieldsErr) Unwrap() error                 { return e.err }
func (e *fieldsErr) DiagFields() map[string]string { return e.f }

func TestModelErrorType(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("calling: %w", &fieldsErr{f: map[string]string{"failure": "connection"}, err: context.DeadlineExceeded}), ErrorTypeTimeout},
		{&fieldsErr{f: map[string]string{"http_status": "429", "provider_code": "rate_limit_exceeded"}}, "rate_limit_exceeded"},
		{&fieldsErr{f: map[string]string{"http_status": "503"}}, ErrorTypeHTTP5xx},
		{fmt.Errorf("x: %w", &fieldsErr{f: map[string]string{"http_status": "404"}}), ErrorTypeHTTP4xx},
		{&fieldsErr{f: map[string]string{"failure": "connection"}, err: errors.New("connection refused")}, ErrorTypeConnection},
		{&fieldsErr{f: map[string]string{"failure": "bad_response", "http_status": "200"}}, ErrorTypeBadResponse},
		{errors.New("HTTP 503: overloaded"), ErrorTypeOther},
	} {
		if got := modelErrorType(diag.From(tc.err)); got != tc.want {
			t.Errorf("%v: error.type %q, want %q", tc.err, got, tc.want)
		}
	}
	if got := modelErrorType(nil); got != ErrorTypeOther {
		t.Errorf("nil: %q", got)
	}
}
