package otelsink

import (
	"strconv"

	"github.com/polyloop/polyloop/diag"
)

// The error.type values of a failed chat span, a small fixed set (plus the
// provider's own error codes), so that an operator can group failures.
const (
	ErrorTypeTimeout     = "timeout"          // the call, or an attempt, ran out of time
	ErrorTypeConnection  = "connection_error" // no complete response: refused, dropped, cut short
	ErrorTypeBadResponse = "bad_response"     // a response the client could not read
	ErrorTypeHTTP4xx     = "http_4xx"         // the provider refused the request, with no error code
	ErrorTypeHTTP5xx     = "http_5xx"         // the provider failed, with no error code
	ErrorTypeOther       = "_OTHER"           // none of these (the conventions' fallback value)
	// ErrorTypePersistence ends an invocation whose store failed (a
	// *polyloop.PersistenceError given to EndRun).
	ErrorTypePersistence = "persistence_error"
)

// modelErrorType classifies a model call's failure from its diagnostic, in
// this order: a deadline anywhere in the cause chain is ErrorTypeTimeout;
// the provider's error code (the provider_code field: "rate_limit_exceeded",
// "overloaded_error", ...) is used as it is; an HTTP status gives its class;
// a client's connection or response failure (the failure field) gives
// ErrorTypeConnection or ErrorTypeBadResponse; anything else is
// ErrorTypeOther. The Go type of the failure stays in the exception event's
// exception.type.
func modelErrorType(d *diag.Diagnostic) string {
	if d == nil {
		return ErrorTypeOther
	}
	if deadline(d) {
		return ErrorTypeTimeout
	}
	if code := field(d, "provider_code"); code != "" {
		return code
	}
	failure := field(d, "failure")
	if status, err := strconv.Atoi(field(d, "http_status")); err == nil && failure != "bad_response" {
		switch {
		case status >= 500:
			return ErrorTypeHTTP5xx
		case status >= 400:
			return ErrorTypeHTTP4xx
		}
	}
	switch failure {
	case "connection":
		return ErrorTypeConnection
	case "bad_response":
		return ErrorTypeBadResponse
	}
	return ErrorTypeOther
}

// deadlineType is the Go type of context.DeadlineExceeded, as diag names it.
const deadlineType = "context.deadlineExceededError"

// deadline reports whether the cause chain holds context.DeadlineExceeded.
func deadline(d *diag.Diagnostic) bool {
	if d.Type == deadlineType {
		return true
	}
	for i := range d.Causes {
		if deadline(&d.Causes[i]) {
			return true
		}
	}
	return false
}

// field finds a known field in the diagnostic or its causes, outermost
// first.
func field(d *diag.Diagnostic, key string) string {
	if v := d.Fields[key]; v != "" {
		return v
	}
	for i := range d.Causes {
		if v := field(&d.Causes[i], key); v != "" {
			return v
		}
	}
	return ""
}
